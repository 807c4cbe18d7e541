// A fake of the `vscode` module, enough for vscode-languageclient to load, construct clients and
// start them against an in-memory server, and for this extension's modules that need VS Code.
// Importing this file installs it: every later require('vscode') gets it. Tests set `settings` and
// read `registered` and `shown`.

import * as path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- Module._resolveFilename is not in its types
import Module = require('node:module');
import { manifest } from './package-json';

type Listener<T> = (value: T) => unknown;

export class Disposable {
    static from(...disposables: { dispose(): unknown }[]): Disposable {
        return new Disposable(() => disposables.forEach((disposable) => disposable.dispose()));
    }
    constructor(private readonly callback: () => unknown = () => undefined) {}
    dispose(): void {
        this.callback();
    }
}

export class EventEmitter<T> {
    private listeners: Listener<T>[] = [];
    readonly event = (listener: Listener<T>): Disposable => {
        this.listeners.push(listener);
        return new Disposable(() => {
            this.listeners = this.listeners.filter((each) => each !== listener);
        });
    };
    fire(value: T): void {
        for (const listener of [...this.listeners]) {
            listener(value);
        }
    }
    dispose(): void {
        this.listeners = [];
    }
}

export enum LogLevel {
    Off = 0,
    Trace = 1,
    Debug = 2,
    Info = 3,
    Warning = 4,
    Error = 5,
}

export class Uri {
    private constructor(
        readonly scheme: string,
        readonly path: string,
    ) {}
    static file(fsPath: string): Uri {
        return new Uri('file', fsPath);
    }
    static parse(value: string): Uri {
        const colon = value.indexOf(':');
        return new Uri(value.slice(0, colon), decodeURIComponent(value.slice(colon + 1).replace(/^\/\//, '')));
    }
    get fsPath(): string {
        return this.path;
    }
    toString(): string {
        return this.scheme === 'file' ? `file://${encodeURI(this.path)}` : `${this.scheme}:${this.path}`;
    }
}

export class RelativePattern {
    constructor(
        readonly baseUri: Uri,
        readonly pattern: string,
    ) {}
}

// Classes vscode-languageclient extends when it loads.
export class CompletionItem {}
export class CodeLens {}
export class DocumentLink {}
export class CodeAction {}
export class Diagnostic {}
export class CallHierarchyItem {}
export class TypeHierarchyItem {}
export class SymbolInformation {}
export class InlayHint {}
export class CancellationError extends Error {}

export const NotebookCellKind = { Markup: 1, Code: 2 };
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
export const version = '1.93.0';

// What the user set, by section ("gbls.trace.server"), for every scope, over the defaults that
// package.json contributes; and which sections were read.
export const settings = new Map<string, unknown>();
const defaults = new Map<string, unknown>(
    Object.entries(manifest.contributes.configuration.properties).map(([key, property]) => [key, property.default]),
);
export const configurationRequests: string[] = [];
export const configurationChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();

export function setSetting(section: string, value: unknown): void {
    settings.set(section, value);
    configurationChanged.fire({ affectsConfiguration: (changed) => section.startsWith(changed) });
}

// Commands as VS Code keeps them: registering an id twice throws, as it does there.
export const registered = new Map<string, (...args: unknown[]) => unknown>();

// Messages the extension showed, as [kind, message].
export const shown: [string, string][] = [];

// Any on*/register*/create* this fake does not define: an event or a registration that does nothing.
function lenient<T extends object>(known: T): T {
    return new Proxy(known, {
        get(target, property, receiver) {
            if (Reflect.has(target, property) || typeof property !== 'string') {
                return Reflect.get(target, property, receiver);
            }
            if (/^(on|register|create)[A-Z]/.test(property)) {
                return () => new Disposable();
            }
            return undefined;
        },
    });
}

export const workspace = lenient({
    workspaceFolders: undefined,
    textDocuments: [] as unknown[],
    notebookDocuments: [] as unknown[],
    isTrusted: true,
    getConfiguration(section?: string) {
        configurationRequests.push(section ?? '');
        const prefix = section ? `${section}.` : '';
        return {
            get<T>(key: string, fallback?: T): T | undefined {
                const full = `${prefix}${key}`;
                if (settings.has(full)) {
                    return settings.get(full) as T;
                }
                return defaults.has(full) ? (defaults.get(full) as T) : fallback;
            },
            has: (key: string) => settings.has(`${prefix}${key}`) || defaults.has(`${prefix}${key}`),
            inspect: () => undefined,
            update: () => Promise.resolve(),
        };
    },
    onDidChangeConfiguration: configurationChanged.event,
    getWorkspaceFolder: () => undefined,
});

export const window = lenient({
    activeTextEditor: undefined,
    visibleTextEditors: [] as unknown[],
    tabGroups: lenient({ all: [] as unknown[] }),
    showErrorMessage: (message: string) => {
        shown.push(['error', message]);
        return Promise.resolve(undefined);
    },
    showWarningMessage: (message: string) => {
        shown.push(['warning', message]);
        return Promise.resolve(undefined);
    },
    showInformationMessage: (message: string) => {
        shown.push(['information', message]);
        return Promise.resolve(undefined);
    },
    withProgress: <R>(_options: unknown, task: (progress: unknown) => Promise<R>) => task({ report: () => undefined }),
});

export const languages = lenient({
    match: () => 0,
    createDiagnosticCollection: (name?: string) => ({
        name,
        set: () => undefined,
        delete: () => undefined,
        clear: () => undefined,
        forEach: () => undefined,
        get: () => undefined,
        has: () => false,
        dispose: () => undefined,
    }),
});

export const commands = lenient({
    registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable {
        if (registered.has(id)) {
            throw new Error(`command '${id}' already exists`);
        }
        registered.set(id, handler);
        return new Disposable(() => registered.delete(id));
    },
    executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
        const handler = registered.get(id);
        return handler ? Promise.resolve(handler(...args)) : Promise.reject(new Error(`command '${id}' not found`));
    },
});

export const env = lenient({ appName: 'fake VS Code', language: 'en', openExternal: () => Promise.resolve(true) });

export const extensions = lenient({ getExtension: () => undefined });

// A plain output channel that keeps its lines.
export class FakeOutputChannel {
    readonly lines: string[] = [];
    constructor(readonly name: string) {}
    append(value: string): void {
        this.lines.push(value);
    }
    appendLine(value: string): void {
        this.lines.push(value);
    }
    replace(value: string): void {
        this.lines.splice(0, this.lines.length, value);
    }
    clear(): void {
        this.lines.splice(0);
    }
    show(): void {}
    hide(): void {}
    dispose(): void {}
}

// A log output channel at `logLevel` that keeps its lines as "level message".
export class FakeLogOutputChannel extends FakeOutputChannel {
    readonly levelChanged = new EventEmitter<LogLevel>();
    readonly onDidChangeLogLevel = this.levelChanged.event;
    constructor(
        name: string,
        public logLevel: LogLevel = LogLevel.Info,
    ) {
        super(name);
    }
    private log(level: LogLevel, message: string | Error): void {
        if (this.logLevel !== LogLevel.Off && level >= this.logLevel) {
            this.lines.push(`${LogLevel[level].toLowerCase()} ${String(message)}`);
        }
    }
    trace(message: string): void {
        this.log(LogLevel.Trace, message);
    }
    debug(message: string): void {
        this.log(LogLevel.Debug, message);
    }
    info(message: string): void {
        this.log(LogLevel.Info, message);
    }
    warn(message: string): void {
        this.log(LogLevel.Warning, message);
    }
    error(message: string | Error): void {
        this.log(LogLevel.Error, message);
    }
}

// Whatever else vscode-languageclient reads when it loads or converts (CodeActionKind.Empty, …): a
// value of its own for each path, which can be read from, called and constructed.
function anything(name: string): unknown {
    const children = new Map<string | symbol, unknown>();
    return new Proxy(function () {}, {
        get(_target, property) {
            if (property === 'toString' || property === Symbol.toPrimitive) {
                return () => name;
            }
            if (!children.has(property)) {
                children.set(property, anything(`${name}.${String(property)}`));
            }
            return children.get(property);
        },
        apply: () => anything(`${name}()`),
        construct: () => ({ name }),
    });
}

const known = module.exports as Record<string | symbol, unknown>;
module.exports = new Proxy(known, {
    get(target, property) {
        if (Reflect.has(target, property) || typeof property !== 'string' || !/^[A-Z]/.test(property)) {
            return Reflect.get(target, property);
        }
        target[property] = anything(property);
        return target[property];
    },
});

// Every later require('vscode') gets this module.
const FAKE = path.join(__dirname, 'fake-vscode.js');
const loader = Module as unknown as { _resolveFilename(request: string, ...rest: unknown[]): string };
const resolve = loader._resolveFilename.bind(Module);
loader._resolveFilename = (request: string, ...rest: unknown[]) =>
    request === 'vscode' ? FAKE : resolve(request, ...rest);
