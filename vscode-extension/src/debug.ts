// How the server is started: `<python> tool/gbls_server.py`, or, to debug it together with the
// extension (.vscode/launch.json), under debugpy, which connects to the debugger that VS Code
// listens with on GBLS_DEBUG_PORT and waits for it before the server runs. The first client's
// server is the one debugged: the others run as usual. No vscode import: unit-tested under node.

export const DEBUG_PORT_VARIABLE = 'GBLS_DEBUG_PORT';

export interface ServerCommand {
    command: string;
    args: string[];
}

// The port in GBLS_DEBUG_PORT; undefined when unset or empty; an Error when it is not a port.
export function debugPort(environment: Readonly<Record<string, string | undefined>>): number | Error | undefined {
    const value = environment[DEBUG_PORT_VARIABLE]?.trim();
    if (!value) {
        return undefined;
    }
    const port = Number(value);
    if (!/^\d+$/.test(value) || port < 1 || port > 65535) {
        return new Error(
            `${DEBUG_PORT_VARIABLE} is "${value}", not a port (1 to 65535): the server runs without a debugger.`,
        );
    }
    return port;
}

export function serverCommand(python: string, script: string, debugPort: number | undefined): ServerCommand {
    if (debugPort === undefined) {
        return { command: python, args: [script] };
    }
    // Frozen modules would make debugpy miss breakpoints in the standard library, and it says so on
    // every start; Pythons before 3.11 ignore the option.
    // prettier-ignore
    const debugpy = ['-X', 'frozen_modules=off', '-m', 'debugpy', '--connect', `127.0.0.1:${debugPort}`, '--wait-for-client'];
    return { command: python, args: [...debugpy, script] };
}

export function noDebugpy(interpreter: string, port: number): string {
    return (
        `${DEBUG_PORT_VARIABLE} is ${port}, but ${interpreter} has no debugpy: the server runs without a ` +
        `debugger. Install it with \`${interpreter} -m pip install debugpy\` to debug the server.`
    );
}
