// Whether an interpreter can run gbls, from what tool/probe.py prints; and what to tell the user
// when it cannot. No vscode import: unit-tested under node.

export const MIN_PYTHON: readonly [number, number] = [3, 10]; // the server's own floor (pyproject)
export const MIN_TORCH: readonly [number, number] = [2, 6];
export const TORCH_REQUIREMENT = `torch>=${MIN_TORCH.join('.')}`;

export interface Probe {
    python: [number, number, number];
    torch: string | null;
    executable: string;
    debugpy: boolean; // whether `python -m debugpy` would run: needed only to debug the server
}

// What the user can do about a problem; the extension turns each into a button.
export type Fix = 'chooseInterpreter' | 'installTorch';

export interface Problem {
    reason: string; // short, for the status bar: "not analysed (reason)"
    message: string;
    fixes: Fix[];
}

export function parseProbe(stdout: string): Probe {
    const value: unknown = JSON.parse(stdout.trim().split('\n').pop() ?? '');
    const probe = value as Partial<Probe>;
    if (
        !Array.isArray(probe.python) ||
        probe.python.length !== 3 ||
        !probe.python.every((part) => typeof part === 'number') ||
        !(probe.torch === null || typeof probe.torch === 'string') ||
        typeof probe.executable !== 'string' ||
        typeof probe.debugpy !== 'boolean'
    ) {
        throw new Error(`unexpected probe output: ${stdout.trim()}`);
    }
    return probe as Probe;
}

// "2.13.0+cpu" → [2, 13]; "2.6.0a0+git1234" → [2, 6]; nothing parseable → undefined.
export function releaseOf(version: string): [number, number] | undefined {
    const match = /^(\d+)\.(\d+)/.exec(version);
    return match ? [Number(match[1]), Number(match[2])] : undefined;
}

export function atLeast(version: readonly [number, number], minimum: readonly [number, number]): boolean {
    return version[0] !== minimum[0] ? version[0] > minimum[0] : version[1] >= minimum[1];
}

export function checkProbe(probe: Probe): Problem | undefined {
    const python = probe.python.join('.');
    if (!atLeast([probe.python[0], probe.python[1]], MIN_PYTHON)) {
        return {
            reason: `Python ${python} is too old`,
            message: `gbls needs Python ${MIN_PYTHON.join('.')} or newer; ${probe.executable} is Python ${python}.`,
            fixes: ['chooseInterpreter'],
        };
    }
    if (probe.torch === null) {
        return {
            reason: 'no torch in the interpreter',
            message: `gbls analyses with your torch, and ${probe.executable} has none: install ${TORCH_REQUIREMENT} there or choose another interpreter.`,
            fixes: ['installTorch', 'chooseInterpreter'],
        };
    }
    const torch = releaseOf(probe.torch);
    if (torch === undefined || !atLeast(torch, MIN_TORCH)) {
        return {
            reason: `torch ${probe.torch} is not supported`,
            message: `gbls needs ${TORCH_REQUIREMENT}; ${probe.executable} has torch ${probe.torch}.`,
            fixes: ['installTorch', 'chooseInterpreter'],
        };
    }
    return undefined;
}

export function noInterpreter(): Problem {
    return {
        reason: 'no Python interpreter',
        message: `gbls needs a Python interpreter with ${TORCH_REQUIREMENT}: select one with the Python extension, or set gbls.interpreter.`,
        fixes: ['chooseInterpreter'],
    };
}

export function probeFailed(interpreter: string, error: string): Problem {
    return {
        reason: 'the interpreter does not run',
        message: `gbls cannot run the interpreter ${interpreter}: ${error}`,
        fixes: ['chooseInterpreter'],
    };
}

export function unknownVariables(setting: string, variables: string[]): Problem {
    return {
        reason: 'gbls.interpreter has an unknown variable',
        message: `gbls.interpreter is ${setting}, and ${variables.join(', ')} has no value here: gbls knows ~, \${userHome}, \${workspaceFolder} and \${workspaceFolder:name} (of a folder of this workspace).`,
        fixes: ['chooseInterpreter'],
    };
}
