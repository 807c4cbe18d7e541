// The settings the extension sends to the server: the same object in initializationOptions and in
// every answer to the server's workspace/configuration request, so that the server never sees two
// different interpreters (a change of interpreter restarts its warm worker).

export type Severity = 'error' | 'warning' | 'information' | 'hint';
export type Sandbox = 'auto' | 'bwrap' | 'off';
export type Device = 'auto' | 'cpu' | 'cuda';
export type Values = 'auto' | 'exact';

export interface ServerSettings {
    enable: boolean;
    interpreter: string;
    timeout: number;
    memoryMb: number;
    debounceMs: number;
    severity: Severity;
    analyseOnChange: boolean;
    runMain: boolean;
    sandbox: Sandbox;
    device: Device;
    values: Values;
    severityOverrides: Record<string, Severity>; // by code: a GB id or "recompile"
    ignore: string[];
    traces: string[]; // real runs' traces and logs, paths or globs relative to the workspace folder
    inlayHints: boolean; // "graph 2 of 3" after a break, "×4" at a call that recompiles
}

// Settings of the extension alone, never sent: gbls.trace.server is read by vscode-languageclient.
export const CLIENT_SETTINGS: readonly string[] = ['trace.server'];

// The settings the server cannot take while running: the interpreter is the one it runs with, and
// a disabled gbls has no server at all. Every other change is pulled by the running server.
export const RESTART_KEYS: readonly (keyof ServerSettings)[] = ['enable', 'interpreter'];

// The part of vscode.WorkspaceConfiguration used here; get() returns the contributed default.
export interface Configuration {
    get<T>(section: string): T | undefined;
}

function contributed<T>(configuration: Configuration, key: keyof ServerSettings): T {
    const value = configuration.get<T>(key);
    if (value === undefined) {
        throw new Error(`gbls.${key} has no value: package.json must contribute it with a default`);
    }
    return value;
}

export function readSettings(configuration: Configuration): ServerSettings {
    return {
        enable: contributed<boolean>(configuration, 'enable'),
        interpreter: contributed<string>(configuration, 'interpreter'),
        timeout: contributed<number>(configuration, 'timeout'),
        memoryMb: contributed<number>(configuration, 'memoryMb'),
        debounceMs: contributed<number>(configuration, 'debounceMs'),
        severity: contributed<Severity>(configuration, 'severity'),
        analyseOnChange: contributed<boolean>(configuration, 'analyseOnChange'),
        runMain: contributed<boolean>(configuration, 'runMain'),
        sandbox: contributed<Sandbox>(configuration, 'sandbox'),
        device: contributed<Device>(configuration, 'device'),
        values: contributed<Values>(configuration, 'values'),
        severityOverrides: contributed<Record<string, Severity>>(configuration, 'severityOverrides'),
        ignore: contributed<string[]>(configuration, 'ignore'),
        traces: contributed<string[]>(configuration, 'traces'),
        inlayHints: contributed<boolean>(configuration, 'inlayHints'),
    };
}

// What the server is told: the user's settings with the interpreter it really runs with.
export function serverSettings(configuration: Configuration, interpreter: string): ServerSettings {
    return { ...readSettings(configuration), interpreter };
}

// What ${...} in a path setting stands for: the user's home, the folder the setting applies to and
// every folder of the workspace by name.
export interface PathVariables {
    home: string;
    folder: string | undefined; // ${workspaceFolder}
    folders: readonly { name: string; path: string }[]; // ${workspaceFolder:name}
}

// `~`, `${userHome}`, `${workspaceFolder}` and `${workspaceFolder:name}` in gbls.interpreter, as users
// write them in other Python settings. A variable without a value stays as it is (see unresolved).
export function expandPath(value: string, variables: PathVariables): string {
    let path = value.trim();
    if (path === '~' || path.startsWith('~/') || path.startsWith('~\\')) {
        path = variables.home + path.slice(1);
    }
    return path.replace(/\$\{(userHome|workspaceFolder)(?::([^}]*))?\}/g, (whole, name: string, folder?: string) => {
        if (name === 'userHome') {
            return folder === undefined ? variables.home : whole;
        }
        if (folder === undefined) {
            return variables.folder ?? whole;
        }
        return variables.folders.find((candidate) => candidate.name === folder)?.path ?? whole;
    });
}

// The ${...} left in an expanded path: variables gbls does not know, or without a value here.
export function unresolved(path: string): string[] {
    return path.match(/\$\{[^}]*\}/g) ?? [];
}
