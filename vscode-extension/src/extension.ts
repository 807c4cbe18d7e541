// gbls for VS Code: finds each workspace folder's Python, starts a gbls language server with it once
// the workspace is trusted (one per folder, folders.ts), and shows what the servers find in the
// status bar and as break reports.

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    ExecuteCommandRequest,
    LanguageClient,
    State,
} from 'vscode-languageclient/node';
import { LabelledLog, TRACE_CHANNEL, TRACE_SETTING, TraceChannel, traceSetting } from './channels';
import { createClient } from './client';
import { ServerCommands } from './commands';
import { debugPort, noDebugpy } from './debug';
import { checkProbe, noInterpreter, Problem, probeFailed, TORCH_REQUIREMENT, unknownVariables } from './environment';
import { ClientPlan, clientFor, Folder, inFolder, planClients } from './folders';
import { findInterpreter, onActiveEnvironmentChange, probe, PYTHON_EXTENSION } from './interpreter';
import { CLIENT_SHOW_REPORT, SERVER_SHOW_REPORT } from './lenses';
import { LastShown } from './restore';
import { RESTART_KEYS, unresolved } from './settings';
import { FileStatus, Phase, received, statusView } from './status';

const SERVER_ANALYSE_FILE = 'gbls.analyseFile';
const SERVER_IMPORT_TRACE = 'gbls.importTrace';
const SERVER_DOCTOR = 'gbls.doctor';
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

// What gbls analyses of the editor the user is in: a Python file, or a Jupyter notebook (its
// Python cells are one program, and the server reports on the notebook); undefined for anything else.
function activeAnalysed(): vscode.Uri | undefined {
    const document = vscode.window.activeTextEditor?.document;
    if (document?.languageId === 'python') {
        const notebook = vscode.workspace.notebookDocuments.find((candidate) =>
            candidate.getCells().some((cell) => cell.document === document),
        );
        return notebook?.uri ?? document.uri;
    }
    const notebook = vscode.window.activeNotebookEditor?.notebook;
    return notebook?.notebookType === 'jupyter-notebook' ? notebook.uri : undefined;
}

function isOpen(uri: vscode.Uri): boolean {
    const key = uri.toString();
    return vscode.workspace.textDocuments.some((document) => document.uri.toString() === key);
}

function messageOf(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
}

// What every folder's server shares.
interface Shared {
    extensionPath: string;
    storage: vscode.Uri | undefined; // the extension's storage for this workspace
    log: vscode.LogOutputChannel;
    traceSink: () => vscode.OutputChannel;
    commands: ServerCommands;
    render: () => void;
    first: () => FolderServer | undefined; // the server GBLS_DEBUG_PORT is for
}

// One workspace folder's language client, and what the status bar knows of it.
class FolderServer {
    client: LanguageClient | undefined;
    phase: Phase = { kind: 'starting' };
    readonly statuses = new Map<string, FileStatus>(); // by URI as the client sends it
    private readonly output: LabelledLog;
    private readonly trace: TraceChannel;
    private readonly shown: LastShown;
    private queue: Promise<void> = Promise.resolve();

    constructor(
        readonly plan: ClientPlan,
        private readonly shared: Shared,
    ) {
        this.output = new LabelledLog(shared.log, plan.label);
        this.trace = new TraceChannel(shared.traceSink, plan.label, () =>
            traceSetting(vscode.workspace.getConfiguration('gbls')),
        );
        this.shown = new LastShown(shared.storage, plan.key);
    }

    private get folder(): vscode.WorkspaceFolder | undefined {
        const uri = this.plan.folder?.uri;
        return vscode.workspace.workspaceFolders?.find((folder) => folder.uri.toString() === uri);
    }

    // Serialised, so that a change of settings during a start restarts after it, with the new settings.
    restart(): Promise<void> {
        this.queue = this.queue
            .then(() => this.stop())
            .then(() => this.start())
            .catch((error: unknown) => {
                const message = `gbls did not start: ${messageOf(error)}`;
                this.output.error(message);
                this.setPhase({ kind: 'problem', reason: 'gbls did not start', message });
            });
        return this.queue;
    }

    dispose(): Promise<void> {
        this.queue = this.queue
            .then(() => this.stop())
            .then(() => {
                this.trace.dispose();
                this.shown.dispose();
            });
        return this.queue;
    }

    private async start(): Promise<void> {
        if (!vscode.workspace.isTrusted) {
            this.setPhase({ kind: 'untrusted' }); // analysing runs the user's code
            return;
        }
        const folder = this.folder;
        if (!vscode.workspace.getConfiguration('gbls', folder).get<boolean>('enable')) {
            this.setPhase({ kind: 'disabled' });
            return;
        }
        this.setPhase({ kind: 'starting' });
        this.restoreShown();
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
        let debugpy = false;
        try {
            const found = await probe(interpreter.path, this.shared.extensionPath);
            this.output.info(`Python ${found.python.join('.')}, torch ${found.torch ?? 'missing'}`);
            problem = checkProbe(found);
            debugpy = found.debugpy;
        } catch (error) {
            problem = probeFailed(interpreter.path, messageOf(error));
        }
        if (problem !== undefined) {
            this.explain(problem, interpreter.path);
            return;
        }
        const client = createClient({
            interpreter: interpreter.path,
            extensionPath: this.shared.extensionPath,
            plan: this.plan,
            folder,
            output: this.output,
            trace: this.trace,
            debugPort: this.debugPort(interpreter.path, debugpy),
            published: (uri) => this.shown.replaced(uri),
        });
        this.shared.commands.adopt(client);
        this.client = client;
        client.onDidChangeState((event) => {
            if (this.client === client) {
                this.setPhase(phaseOf(event.newState));
            }
        });
        client.onNotification(STATUS_NOTIFICATION, (status: FileStatus) => {
            this.statuses.set(status.uri, received(this.statuses.get(status.uri), status));
            this.shared.render();
            if (status.state === 'done') {
                if (!status.cached) {
                    for (const uri of this.shown.keepOnly(isOpen)) {
                        this.statuses.delete(this.protocolUri(uri));
                    }
                }
                this.shown.saveSoon(client.diagnostics, () => [...this.statuses.values()]);
            }
        });
        try {
            await client.start();
        } catch (error) {
            const message = `The gbls server did not start: ${messageOf(error)}`;
            this.setPhase({ kind: 'problem', reason: 'the server did not start', message });
            void vscode.window.showErrorMessage(message, 'Show Output').then((choice) => choice && this.output.show());
        }
    }

    // The port of GBLS_DEBUG_PORT, for the debugged server whose interpreter has debugpy.
    private debugPort(interpreter: string, debugpy: boolean): number | undefined {
        const port = this.shared.first() === this ? debugPort(process.env) : undefined;
        if (port instanceof Error) {
            this.output.warn(port.message);
            void vscode.window.showWarningMessage(port.message);
            return undefined;
        }
        if (port !== undefined && !debugpy) {
            const message = noDebugpy(interpreter, port);
            this.output.warn(message);
            void vscode.window.showWarningMessage(message);
            return undefined;
        }
        if (port !== undefined) {
            this.output.info(`The server connects to the debugger on 127.0.0.1:${port} and waits for it.`);
        }
        return port;
    }

    // What this folder's files showed in the last window, until the server's own results replace it.
    private restoreShown(): void {
        const { files, statuses } = this.shown.restore((uri) => this.client?.diagnostics?.has(uri) ?? false);
        for (const status of statuses) {
            if (!this.statuses.has(status.uri)) {
                this.statuses.set(status.uri, status);
            }
        }
        if (files > 0) {
            this.output.info(`Showing the last window's results of ${files} files until the server's own`);
        }
        this.shared.render();
    }

    private async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.statuses.clear();
        this.shown.clear();
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
        if (event.affectsConfiguration(`gbls.${TRACE_SETTING}`)) {
            this.trace.refresh();
        }
        const folder = this.folder;
        if (!event.affectsConfiguration('gbls', folder)) {
            return;
        }
        if (
            this.client === undefined ||
            RESTART_KEYS.some((key) => event.affectsConfiguration(`gbls.${key}`, folder))
        ) {
            void this.restart();
        } else {
            void this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
        }
    }

    // The Python extension's environment for `resource` changed (undefined: for the whole window).
    activeEnvironmentChanged(resource: vscode.Uri | undefined): void {
        const mine =
            resource === undefined ||
            this.plan.everyFile ||
            (this.plan.folder !== undefined &&
                (resource.toString() === this.plan.folder.uri || inFolder(this.plan.folder.uri, resource.toString())));
        if (mine && !vscode.workspace.getConfiguration('gbls', this.folder).get<string>('interpreter')) {
            void this.restart(); // gbls.interpreter, when set, wins over the Python extension
        }
    }

    protocolUri(uri: vscode.Uri): string {
        return this.client ? this.client.code2ProtocolConverter.asUri(uri) : uri.toString();
    }

    // A notification with a button per fix; clicking the status bar item starts over.
    private explain(problem: Problem, interpreter: string | undefined): void {
        const message = this.plan.label === undefined ? problem.message : `${this.plan.label}: ${problem.message}`;
        this.setPhase({ kind: 'problem', reason: problem.reason, message });
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
        void vscode.window.showErrorMessage(message, ...actions.keys()).then((choice) => {
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
        if (phase.kind !== 'starting' && phase.kind !== 'running') {
            this.shown.clear(); // no server will replace them
        }
        this.shared.render();
    }
}

class Gbls implements vscode.Disposable {
    private servers: FolderServer[] = []; // in the order of planClients: the first takes untitled files
    private readonly reports = new Map<string, string>(); // markdown by gbls-report: URI
    readonly reportChanged = new vscode.EventEmitter<vscode.Uri>();
    private readonly shared: Shared;

    constructor(
        extensionPath: string,
        storage: vscode.Uri | undefined,
        output: vscode.LogOutputChannel,
        private readonly item: vscode.StatusBarItem,
        traceSink: () => vscode.OutputChannel,
    ) {
        const commands = new ServerCommands((uri) => this.serverFor(uri)?.client ?? this.activeServer()?.client);
        this.shared = {
            extensionPath,
            storage,
            log: output,
            traceSink,
            commands,
            render: () => this.render(),
            first: () => this.servers[0],
        };
    }

    // A client for each folder of planClients: new plans start, gone ones stop, the others run on.
    foldersChanged(): Promise<void> {
        const folders: Folder[] = (vscode.workspace.workspaceFolders ?? []).map((folder) => ({
            uri: folder.uri.toString(),
            name: folder.name,
        }));
        const plans = planClients(folders);
        const kept = new Map(this.servers.map((server) => [server.plan.key, server]));
        const started: Promise<void>[] = [];
        this.servers = plans.map((plan) => {
            const running = kept.get(plan.key);
            if (running !== undefined) {
                kept.delete(plan.key);
                return running;
            }
            const server = new FolderServer(plan, this.shared);
            started.push(server.restart());
            return server;
        });
        const stopped = [...kept.values()].map((server) => server.dispose());
        this.render();
        return Promise.all([...started, ...stopped]).then(() => undefined);
    }

    // gbls: Restart server, and the status bar's "click to try again": the active file's server, or all.
    restart(): Promise<void> {
        const active = this.activeServer();
        return active ? active.restart() : this.restartAll();
    }

    restartAll(): Promise<void> {
        return Promise.all(this.servers.map((server) => server.restart())).then(() => undefined);
    }

    stop(): Promise<void> {
        const servers = this.servers;
        this.servers = [];
        return Promise.all(servers.map((server) => server.dispose())).then(() => undefined);
    }

    configurationChanged(event: vscode.ConfigurationChangeEvent): void {
        for (const server of this.servers) {
            server.configurationChanged(event);
        }
    }

    activeEnvironmentChanged(resource: vscode.Uri | undefined): void {
        for (const server of this.servers) {
            server.activeEnvironmentChanged(resource);
        }
    }

    documentClosed(uri: vscode.Uri): void {
        for (const server of this.servers) {
            server.statuses.delete(server.protocolUri(uri));
        }
    }

    // The server of a document, by its URI as VS Code or the client writes it.
    private serverFor(uri: vscode.Uri | string | undefined): FolderServer | undefined {
        if (uri === undefined) {
            return undefined;
        }
        const normal = (typeof uri === 'string' ? vscode.Uri.parse(uri) : uri).toString();
        const plan = clientFor(
            this.servers.map((server) => server.plan),
            normal,
        );
        return this.servers.find((server) => server.plan === plan);
    }

    private activeServer(): FolderServer | undefined {
        return this.serverFor(activeAnalysed());
    }

    // The running client of `document`'s server, or undefined and a warning that says why.
    private running(uri: vscode.Uri): LanguageClient | undefined {
        const server = this.serverFor(uri);
        if (server?.client?.isRunning()) {
            return server.client;
        }
        const why = statusView(server?.phase ?? { kind: 'outside' }, undefined).tooltip;
        void vscode.window.showWarningMessage(`gbls is not running. ${why}`);
        return undefined;
    }

    async analyseCurrentFile(): Promise<void> {
        const active = activeAnalysed();
        if (active === undefined) {
            void vscode.window.showInformationMessage('gbls analyses Python files and notebooks: open one first.');
            return;
        }
        const client = this.running(active);
        if (client) {
            await client.sendRequest(ExecuteCommandRequest.type, {
                command: SERVER_ANALYSE_FILE,
                arguments: [client.code2ProtocolConverter.asUri(active)],
            });
        }
    }

    // A real run's TORCH_TRACE folder or file, or TORCH_LOGS log, chosen by the user, read by the
    // server of the folder that holds it (else of the active file) onto that folder's source.
    async importTrace(): Promise<void> {
        const chosen = await vscode.window.showOpenDialog({
            canSelectFiles: true,
            canSelectFolders: true,
            canSelectMany: false,
            openLabel: 'Import',
            title: 'gbls: a TORCH_TRACE folder or file, or a TORCH_LOGS=graph_breaks,recompiles log',
        });
        const trace = chosen?.[0];
        if (trace === undefined) {
            return;
        }
        const document = vscode.window.activeTextEditor?.document;
        const client = this.running(this.serverFor(trace) || document === undefined ? trace : document.uri);
        if (client === undefined) {
            return;
        }
        const answer: unknown = await client.sendRequest(ExecuteCommandRequest.type, {
            command: SERVER_IMPORT_TRACE,
            arguments: [client.code2ProtocolConverter.asUri(trace)],
        });
        void vscode.window.showInformationMessage(typeof answer === 'string' ? answer : 'gbls imported the trace.');
    }

    // gbls doctor for the active file's folder (else the first folder): what the setup gives gbls, in
    // the output channel, where the notes of each analysis are too; nothing pops up.
    async doctor(): Promise<void> {
        const active = activeAnalysed();
        const server = active === undefined ? this.servers[0] : this.serverFor(active);
        const client = server?.client?.isRunning() ? server.client : undefined;
        if (client === undefined) {
            void vscode.window.showWarningMessage('gbls is not running: open a Python file of the workspace first.');
            return;
        }
        const answer: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command: SERVER_DOCTOR });
        for (const line of String(answer).trimEnd().split('\n')) {
            this.shared.log.info(line);
        }
        this.shared.log.show(true);
    }

    // From the command palette (the active file) or a code lens ([uri, qualname]).
    async showBreakReport(uri?: string, qualname?: string): Promise<void> {
        const target = uri ?? activeAnalysed()?.toString();
        if (target === undefined) {
            void vscode.window.showInformationMessage('gbls reports on Python files: open one first.');
            return;
        }
        const client = this.running(vscode.Uri.parse(target));
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

    render(): void {
        const active = activeAnalysed();
        if (active === undefined) {
            this.item.hide();
            return;
        }
        const server = this.serverFor(active);
        const view =
            server === undefined
                ? statusView({ kind: 'outside' }, undefined)
                : statusView(server.phase, server.statuses.get(server.protocolUri(active)));
        this.item.text = view.text;
        this.item.tooltip = view.tooltip;
        this.item.command = { command: view.command, title: view.text, arguments: view.arguments };
        this.item.show();
    }

    dispose(): void {
        this.reportChanged.dispose();
        this.shared.commands.dispose();
    }
}

let gbls: Gbls | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const output = vscode.window.createOutputChannel('gbls', { log: true });
    const item = vscode.window.createStatusBarItem('gbls.status', vscode.StatusBarAlignment.Left, 0);
    item.name = 'gbls';
    let traceChannel: vscode.OutputChannel | undefined;
    const traceSink = () => (traceChannel ??= vscode.window.createOutputChannel(TRACE_CHANNEL));
    const controller = new Gbls(context.extensionPath, context.storageUri, output, item, traceSink);
    gbls = controller;
    context.subscriptions.push(
        output,
        item,
        controller,
        { dispose: () => traceChannel?.dispose() },
        vscode.commands.registerCommand('gbls.analyseCurrentFile', () => controller.analyseCurrentFile()),
        vscode.commands.registerCommand(CLIENT_SHOW_REPORT, (uri?: string, qualname?: string) =>
            controller.showBreakReport(uri, qualname),
        ),
        vscode.commands.registerCommand('gbls.importTraceFile', () => controller.importTrace()),
        vscode.commands.registerCommand('gbls.restart', () => controller.restart()),
        vscode.commands.registerCommand('gbls.showOutput', () => output.show()),
        vscode.commands.registerCommand('gbls.showDoctor', () => controller.doctor()),
        vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, {
            onDidChange: controller.reportChanged.event,
            provideTextDocumentContent: (uri) => controller.reportText(uri),
        }),
        vscode.workspace.onDidGrantWorkspaceTrust(() => controller.restartAll()),
        vscode.workspace.onDidChangeWorkspaceFolders(() => controller.foldersChanged()),
        vscode.workspace.onDidChangeConfiguration((event) => controller.configurationChanged(event)),
        vscode.workspace.onDidCloseTextDocument((document) => controller.documentClosed(document.uri)),
        vscode.workspace.onDidCloseNotebookDocument((notebook) => controller.documentClosed(notebook.uri)),
        vscode.window.onDidChangeActiveTextEditor(() => controller.render()),
        vscode.window.onDidChangeActiveNotebookEditor(() => controller.render()),
    );
    void onActiveEnvironmentChange((resource) => controller.activeEnvironmentChanged(resource)).then(
        (listener) => listener && context.subscriptions.push(listener),
        (error: unknown) => output.warn(`The Python extension's API is not available: ${String(error)}`),
    );
    void controller.foldersChanged();
}

export function deactivate(): Promise<void> | undefined {
    return gbls?.stop();
}
