// gbls for VS Code: finds the user's Python, starts the gbls language server with it once the
// workspace is trusted, and shows what the server finds in the status bar and as break reports.

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    ExecuteCommandRequest,
    LanguageClient,
    State,
} from 'vscode-languageclient/node';
import { createClient } from './client';
import { checkProbe, noInterpreter, Problem, probeFailed, TORCH_REQUIREMENT, unknownVariables } from './environment';
import { findInterpreter, onActiveEnvironmentChange, probe, PYTHON_EXTENSION } from './interpreter';
import { CLIENT_SHOW_REPORT, SERVER_SHOW_REPORT } from './lenses';
import { RESTART_KEYS, unresolved } from './settings';
import { FileStatus, Phase, statusView } from './status';

const SERVER_ANALYSE_FILE = 'gbls.analyseFile';
const STATUS_NOTIFICATION = 'gbls/status';
const REPORT_SCHEME = 'gbls-report';

function phaseOf(state: State): Phase {
    switch (state) {
        case State.Starting:
            return { kind: 'starting' };
        case State.Running:
            return { kind: 'running' };
        case State.Stopped:
        case State.StartFailed:
            return { kind: 'stopped' };
    }
}

class Gbls implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private phase: Phase = { kind: 'starting' };
    private readonly statuses = new Map<string, FileStatus>(); // by URI as the client sends it
    private readonly reports = new Map<string, string>(); // markdown by gbls-report: URI
    readonly reportChanged = new vscode.EventEmitter<vscode.Uri>();
    private queue: Promise<void> = Promise.resolve();

    constructor(
        private readonly extensionPath: string,
        private readonly output: vscode.LogOutputChannel,
        private readonly item: vscode.StatusBarItem,
    ) {}

    // Serialised, so that a change of settings during a start restarts after it, with the new settings.
    restart(): Promise<void> {
        this.queue = this.queue
            .then(() => this.stop())
            .then(() => this.start())
            .catch((error: unknown) => {
                const message = `gbls did not start: ${error instanceof Error ? error.message : String(error)}`;
                this.output.error(message);
                this.setPhase({ kind: 'problem', reason: 'gbls did not start', message });
            });
        return this.queue;
    }

    private async start(): Promise<void> {
        if (!vscode.workspace.isTrusted) {
            this.setPhase({ kind: 'untrusted' }); // analysing runs the user's code
            return;
        }
        const folder = vscode.workspace.workspaceFolders?.[0];
        if (!vscode.workspace.getConfiguration('gbls', folder).get<boolean>('enable')) {
            this.setPhase({ kind: 'disabled' });
            return;
        }
        this.setPhase({ kind: 'starting' });
        const interpreter = await findInterpreter(folder);
        if (interpreter === undefined) {
            this.explain(noInterpreter(), undefined);
            return;
        }
        this.output.info(`Interpreter (from ${interpreter.source}): ${interpreter.path}`);
        const unknown = unresolved(interpreter.path);
        if (unknown.length > 0) {
            this.explain(unknownVariables(interpreter.setting ?? interpreter.path, unknown), undefined);
            return;
        }
        let problem: Problem | undefined;
        try {
            const found = await probe(interpreter.path, this.extensionPath);
            this.output.info(`Python ${found.python.join('.')}, torch ${found.torch ?? 'missing'}`);
            problem = checkProbe(found);
        } catch (error) {
            problem = probeFailed(interpreter.path, error instanceof Error ? error.message : String(error));
        }
        if (problem !== undefined) {
            this.explain(problem, interpreter.path);
            return;
        }
        const client = createClient(interpreter.path, this.extensionPath, folder, this.output);
        this.client = client;
        client.onDidChangeState((event) => {
            if (this.client === client) {
                this.setPhase(phaseOf(event.newState));
            }
        });
        client.onNotification(STATUS_NOTIFICATION, (status: FileStatus) => {
            this.statuses.set(status.uri, status);
            this.render();
        });
        try {
            await client.start();
        } catch (error) {
            const message = `The gbls server did not start: ${error instanceof Error ? error.message : String(error)}`;
            this.setPhase({ kind: 'problem', reason: 'the server did not start', message });
            void vscode.window.showErrorMessage(message, 'Show Output').then((choice) => choice && this.output.show());
        }
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.statuses.clear();
        if (client !== undefined) {
            try {
                await client.stop();
            } catch (error) {
                this.output.warn(`gbls server stop: ${String(error)}`); // it may have never started
            }
        }
    }

    // Settings the running server can take are pulled by it; the others need a new server.
    configurationChanged(event: vscode.ConfigurationChangeEvent): void {
        if (!event.affectsConfiguration('gbls')) {
            return;
        }
        if (this.client === undefined || RESTART_KEYS.some((key) => event.affectsConfiguration(`gbls.${key}`))) {
            void this.restart();
        } else {
            void this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
        }
    }

    activeEnvironmentChanged(): void {
        const folder = vscode.workspace.workspaceFolders?.[0];
        if (!vscode.workspace.getConfiguration('gbls', folder).get<string>('interpreter')) {
            void this.restart(); // gbls.interpreter, when set, wins over the Python extension
        }
    }

    documentClosed(document: vscode.TextDocument): void {
        this.statuses.delete(this.protocolUri(document.uri));
    }

    private protocolUri(uri: vscode.Uri): string {
        return this.client ? this.client.code2ProtocolConverter.asUri(uri) : uri.toString();
    }

    private running(): LanguageClient | undefined {
        if (this.client?.isRunning()) {
            return this.client;
        }
        const why = statusView(this.phase, undefined).tooltip;
        void vscode.window.showWarningMessage(`gbls is not running. ${why}`);
        return undefined;
    }

    async analyseCurrentFile(): Promise<void> {
        const document = vscode.window.activeTextEditor?.document;
        if (document?.languageId !== 'python') {
            void vscode.window.showInformationMessage('gbls analyses Python files: open one first.');
            return;
        }
        const client = this.running();
        if (client) {
            await client.sendRequest(ExecuteCommandRequest.type, {
                command: SERVER_ANALYSE_FILE,
                arguments: [this.protocolUri(document.uri)],
            });
        }
    }

    // From the command palette (the active file) or a code lens ([uri, qualname]).
    async showBreakReport(uri?: string, qualname?: string): Promise<void> {
        const document = vscode.window.activeTextEditor?.document;
        const target = uri ?? (document?.languageId === 'python' ? this.protocolUri(document.uri) : undefined);
        if (target === undefined) {
            void vscode.window.showInformationMessage('gbls reports on Python files: open one first.');
            return;
        }
        const client = this.running();
        if (client === undefined) {
            return;
        }
        const answer: unknown = await client.sendRequest(ExecuteCommandRequest.type, {
            command: SERVER_SHOW_REPORT,
            arguments: qualname ? [target, qualname] : [target],
        });
        const markdown = typeof answer === 'string' ? answer : '';
        const name = path.posix.basename(vscode.Uri.parse(target).path);
        const report = vscode.Uri.from({
            scheme: REPORT_SCHEME,
            path: `/${qualname ? `${name} ${qualname}` : name}.md`,
        });
        this.reports.set(report.toString(), markdown);
        this.reportChanged.fire(report);
        await vscode.commands.executeCommand('markdown.showPreview', report);
    }

    reportText(uri: vscode.Uri): string {
        return this.reports.get(uri.toString()) ?? '';
    }

    // A notification with a button per fix; clicking the status bar item starts over.
    private explain(problem: Problem, interpreter: string | undefined): void {
        this.setPhase({ kind: 'problem', reason: problem.reason, message: problem.message });
        this.output.warn(problem.message);
        const actions = new Map<string, () => unknown>();
        for (const fix of problem.fixes) {
            if (fix === 'installTorch' && interpreter !== undefined) {
                actions.set('Install torch', () => this.installTorch(interpreter));
            } else if (fix === 'chooseInterpreter' && vscode.extensions.getExtension(PYTHON_EXTENSION)) {
                actions.set('Select Interpreter', () => vscode.commands.executeCommand('python.setInterpreter'));
            } else if (fix === 'chooseInterpreter') {
                actions.set('Set gbls.interpreter', () =>
                    vscode.commands.executeCommand('workbench.action.openSettings', 'gbls.interpreter'),
                );
            }
        }
        void vscode.window.showErrorMessage(problem.message, ...actions.keys()).then((choice) => {
            if (choice !== undefined) {
                actions.get(choice)?.();
            }
        });
    }

    // pip in a terminal the user can watch; a successful install (exit 0 closes it) restarts gbls.
    private installTorch(interpreter: string): void {
        const terminal = vscode.window.createTerminal({
            name: 'gbls: install torch',
            shellPath: interpreter,
            shellArgs: ['-m', 'pip', 'install', TORCH_REQUIREMENT],
        });
        const closed = vscode.window.onDidCloseTerminal((which) => {
            if (which === terminal) {
                closed.dispose();
                if (which.exitStatus?.code === 0) {
                    void this.restart();
                }
            }
        });
        terminal.show();
    }

    private setPhase(phase: Phase): void {
        this.phase = phase;
        this.render();
    }

    render(): void {
        const document = vscode.window.activeTextEditor?.document;
        if (document?.languageId !== 'python') {
            this.item.hide();
            return;
        }
        const view = statusView(this.phase, this.statuses.get(this.protocolUri(document.uri)));
        this.item.text = view.text;
        this.item.tooltip = view.tooltip;
        this.item.command = { command: view.command, title: view.text, arguments: view.arguments };
        this.item.show();
    }

    dispose(): void {
        this.reportChanged.dispose();
    }
}

let gbls: Gbls | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const output = vscode.window.createOutputChannel('gbls', { log: true });
    const item = vscode.window.createStatusBarItem('gbls.status', vscode.StatusBarAlignment.Left, 0);
    item.name = 'gbls';
    const controller = new Gbls(context.extensionPath, output, item);
    gbls = controller;
    context.subscriptions.push(
        output,
        item,
        controller,
        vscode.commands.registerCommand('gbls.analyseCurrentFile', () => controller.analyseCurrentFile()),
        vscode.commands.registerCommand(CLIENT_SHOW_REPORT, (uri?: string, qualname?: string) =>
            controller.showBreakReport(uri, qualname),
        ),
        vscode.commands.registerCommand('gbls.restart', () => controller.restart()),
        vscode.commands.registerCommand('gbls.showOutput', () => output.show()),
        vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, {
            onDidChange: controller.reportChanged.event,
            provideTextDocumentContent: (uri) => controller.reportText(uri),
        }),
        vscode.workspace.onDidGrantWorkspaceTrust(() => controller.restart()),
        vscode.workspace.onDidChangeConfiguration((event) => controller.configurationChanged(event)),
        vscode.workspace.onDidCloseTextDocument((document) => controller.documentClosed(document)),
        vscode.window.onDidChangeActiveTextEditor(() => controller.render()),
    );
    void onActiveEnvironmentChange(() => controller.activeEnvironmentChanged()).then(
        (listener) => listener && context.subscriptions.push(listener),
        (error: unknown) => output.warn(`The Python extension's API is not available: ${String(error)}`),
    );
    void controller.restart();
}

export function deactivate(): Promise<void> | undefined {
    return gbls?.stop();
}
