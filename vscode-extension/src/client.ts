// A language client: the server is tool/gbls_server.py run by a folder's interpreter over stdio,
// told of that folder only, for the documents of its plan (folders.ts).

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
    LanguageClient,
    LanguageClientOptions,
    RevealOutputChannelOn,
    ServerOptions,
    vsdiag,
} from 'vscode-languageclient/node';
import { serverCommand } from './debug';
import { ClientPlan, serves } from './folders';
import { routeHover } from './hovers';
import { routeLenses } from './lenses';
import { serverSettings } from './settings';

// The client id: vscode-languageclient reads the trace setting as `${CLIENT_ID}.trace.server`.
export const CLIENT_ID = 'gbls';

export interface ClientOptions {
    interpreter: string;
    extensionPath: string;
    plan: ClientPlan;
    folder: vscode.WorkspaceFolder | undefined; // the plan's folder
    output: vscode.LogOutputChannel;
    trace: vscode.LogOutputChannel;
    debugPort: number | undefined; // start the server under debugpy, connecting to this port
    published: (uri: vscode.Uri) => void; // told before the server's diagnostics of a file show
}

export function serverOptions(options: ClientOptions): ServerOptions {
    const script = path.join(options.extensionPath, 'tool', 'gbls_server.py');
    const { command, args } = serverCommand(options.interpreter, script, options.debugPort);
    return { command, args, options: { cwd: options.folder?.uri.fsPath } };
}

export function clientName(plan: ClientPlan): string {
    return plan.label === undefined ? 'gbls' : `gbls (${plan.label})`;
}

export function clientOptions(options: ClientOptions): LanguageClientOptions {
    const { folder, plan } = options;
    const settings = (scope: vscode.Uri | undefined) =>
        serverSettings(vscode.workspace.getConfiguration('gbls', scope), options.interpreter);
    return {
        documentSelector: plan.documentSelector,
        // The server's initialize params name this folder only, as its workspace.
        workspaceFolder: folder,
        outputChannel: options.output,
        traceOutputChannel: options.trace,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        initializationOptions: { gbls: settings(folder?.uri) },
        // Every server asks for every Jupyter notebook: each client gives its own folder's only.
        notebookDocumentOptions: {
            filterCells: (notebook, cells) => (serves(plan, notebook.uri.toString()) ? cells : []),
        },
        middleware: {
            handleDiagnostics: (uri, diagnostics, next) => {
                options.published(uri);
                next(uri, diagnostics);
            },
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
            provideHover: async (document, position, token, next) => {
                const related = vscode.languages
                    .getDiagnostics(document.uri)
                    .some((d) => d.source === 'gbls' && d.range.contains(position) && d.relatedInformation?.length);
                return routeHover(await next(document, position, token), related === true);
            },
            // The server serves pulls, but this extension keeps its push: the window shows its last
            // diagnostics until the server's push replaces them (restore.ts), which a pull would not.
            // A pull never reaches the server, which then never stops pushing. Its answer is
            // "unchanged": the pulls' collection has the pushes' name ("gbls"), one owner in VS Code,
            // and a full report, even empty, would replace the pushed diagnostics.
            provideDiagnostics: () => ({ kind: vsdiag.DocumentDiagnosticReportKind.unChanged, resultId: 'push' }),
            provideWorkspaceDiagnostics: () => ({ items: [] }),
        },
    };
}

export function createClient(options: ClientOptions): LanguageClient {
    return new LanguageClient(CLIENT_ID, clientName(options.plan), serverOptions(options), clientOptions(options));
}
