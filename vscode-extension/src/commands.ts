// The server's commands (gbls.analyseFile, gbls.showReport, gbls.showLocation, …) as VS Code
// commands, one for all the clients. vscode-languageclient registers a VS Code command for each
// command of each client's server, and a second client's registration of the same id throws, so
// that it never starts. Here each client's command registrations come to one table instead, and a
// call goes to the client of the document its first argument names, else to the client of the
// active editor's document, else to the first client whose server has the command.

import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';

// The client of a document's URI (as the client sends it), or of the active editor's document.
export type Route = (uri: string | undefined) => LanguageClient | undefined;

interface Registration {
    client: LanguageClient;
    commands: string[];
}

export class ServerCommands implements vscode.Disposable {
    private readonly registrations = new Map<string, Registration>(); // by registration id
    private readonly commands = new Map<string, vscode.Disposable>(); // by command

    constructor(private readonly route: Route) {}

    // Takes over the client's ExecuteCommandFeature: it calls register() with the server's
    // executeCommandProvider once initialized, unregister() on a dynamic unregistration, clear() on stop.
    adopt(client: LanguageClient): void {
        const feature = client.getFeature(ExecuteCommandRequest.method);
        feature.register = (data) => this.add(data.id, client, data.registerOptions.commands ?? []);
        feature.unregister = (id) => this.remove(id);
        feature.clear = () => {
            for (const [id, registration] of this.registrations) {
                if (registration.client === client) {
                    this.remove(id);
                }
            }
        };
    }

    has(command: string): boolean {
        return this.commands.has(command);
    }

    private add(id: string, client: LanguageClient, commands: string[]): void {
        this.registrations.set(id, { client, commands });
        for (const command of commands) {
            if (!this.commands.has(command)) {
                this.commands.set(
                    command,
                    vscode.commands.registerCommand(command, (...args: unknown[]) => this.run(command, args)),
                );
            }
        }
    }

    private remove(id: string): void {
        this.registrations.delete(id);
        const left = new Set([...this.registrations.values()].flatMap((registration) => registration.commands));
        for (const [command, disposable] of this.commands) {
            if (!left.has(command)) {
                disposable.dispose();
                this.commands.delete(command);
            }
        }
    }

    private clientsWith(command: string): LanguageClient[] {
        return [...this.registrations.values()]
            .filter((registration) => registration.commands.includes(command))
            .map((registration) => registration.client);
    }

    private async run(command: string, args: unknown[]): Promise<unknown> {
        const clients = this.clientsWith(command);
        const routed = this.route(typeof args[0] === 'string' ? args[0] : undefined);
        const client = routed !== undefined && clients.includes(routed) ? routed : clients[0];
        if (client === undefined) {
            throw new Error(`no gbls server has the command ${command}`);
        }
        try {
            return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
        } catch (error) {
            return client.handleFailedRequest(ExecuteCommandRequest.type, undefined, error, undefined);
        }
    }

    dispose(): void {
        for (const disposable of this.commands.values()) {
            disposable.dispose();
        }
        this.commands.clear();
        this.registrations.clear();
    }
}
