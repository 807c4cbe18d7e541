// The language client: the server is tool/gbls_server.py run by the user's interpreter over stdio.

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
    LanguageClient,
    LanguageClientOptions,
    RevealOutputChannelOn,
    ServerOptions,
} from 'vscode-languageclient/node';
import { routeLenses } from './lenses';
import { serverSettings } from './settings';

export function createClient(
    interpreter: string,
    extensionPath: string,
    folder: vscode.WorkspaceFolder | undefined,
    output: vscode.LogOutputChannel,
): LanguageClient {
    const serverOptions: ServerOptions = {
        command: interpreter,
        args: [path.join(extensionPath, 'tool', 'gbls_server.py')],
        options: { cwd: folder?.uri.fsPath },
    };
    const settings = (scope: vscode.Uri | undefined) =>
        serverSettings(vscode.workspace.getConfiguration('gbls', scope), interpreter);
    const clientOptions: LanguageClientOptions = {
        documentSelector: [
            { scheme: 'file', language: 'python' },
            { scheme: 'untitled', language: 'python' },
        ],
        outputChannel: output,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        initializationOptions: { gbls: settings(folder?.uri) },
        middleware: {
            workspace: {
                // The server pulls section "gbls" on start and after every change of settings.
                configuration: async (params, token, next) => {
                    const answers = await next(params, token);
                    if (!Array.isArray(answers)) {
                        return answers;
                    }
                    return params.items.map((item, index): unknown =>
                        item.section === 'gbls'
                            ? settings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : folder?.uri)
                            : (answers[index] as unknown),
                    );
                },
            },
            provideCodeLenses: async (document, token, next) => routeLenses(await next(document, token)),
        },
    };
    return new LanguageClient('gbls', 'gbls', serverOptions, clientOptions);
}
