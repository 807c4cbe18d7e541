// Which Python runs gbls: gbls.interpreter if set, else the Python extension's active environment.
// The server runs with it and so does the worker, which imports the user's torch.

import { execFile } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';
import { parseProbe, Probe } from './environment';
import { expandPath } from './settings';

export const PYTHON_EXTENSION = 'ms-python.python';
const PROBE_TIMEOUT_MS = 60_000; // a cold conda interpreter on a network disk can take a while

export interface Interpreter {
    path: string;
    source: string;
    setting?: string; // gbls.interpreter as written, when the path comes from it
}

// Not a dependency of this extension: gbls.interpreter is enough without it.
async function pythonExtension(): Promise<PythonExtension | undefined> {
    return vscode.extensions.getExtension(PYTHON_EXTENSION) ? PythonExtension.api() : undefined;
}

// gbls.interpreter of `folder` (its folder settings over the workspace's and the user's), else the
// Python extension's environment for that folder.
export async function findInterpreter(folder: vscode.WorkspaceFolder | undefined): Promise<Interpreter | undefined> {
    const setting = vscode.workspace.getConfiguration('gbls', folder).get<string>('interpreter') ?? '';
    if (setting.trim() !== '') {
        const variables = {
            home: os.homedir(),
            folder: folder?.uri.fsPath,
            folders: (vscode.workspace.workspaceFolders ?? []).map((each) => ({
                name: each.name,
                path: each.uri.fsPath,
            })),
        };
        return { path: expandPath(setting, variables), source: 'gbls.interpreter', setting };
    }
    const api = await pythonExtension();
    if (api === undefined) {
        return undefined;
    }
    const environment = await api.environments.resolveEnvironment(
        api.environments.getActiveEnvironmentPath(folder?.uri),
    );
    const executable = environment?.executable.uri?.fsPath;
    return executable ? { path: executable, source: 'the Python extension' } : undefined;
}

// `listener` gets the folder (or file) whose environment changed; undefined: the global one.
export async function onActiveEnvironmentChange(
    listener: (resource: vscode.Uri | undefined) => void,
): Promise<vscode.Disposable | undefined> {
    return (await pythonExtension())?.environments.onDidChangeActiveEnvironmentPath((event) =>
        listener(event.resource instanceof vscode.Uri ? event.resource : event.resource?.uri),
    );
}

export function probe(interpreter: string, extensionPath: string): Promise<Probe> {
    return new Promise((resolve, reject) => {
        execFile(
            interpreter,
            [path.join(extensionPath, 'tool', 'probe.py')],
            { timeout: PROBE_TIMEOUT_MS },
            (error, stdout, stderr) => {
                if (error) {
                    reject(new Error(stderr.trim() || error.message));
                    return;
                }
                try {
                    resolve(parseProbe(stdout));
                } catch (parseError) {
                    reject(parseError instanceof Error ? parseError : new Error(String(parseError)));
                }
            },
        );
    });
}
