// The status bar item's text, tooltip and click, from the extension's state and the server's
// gbls/status notifications. No vscode import: unit-tested under node.

// The body of the server's gbls/status notification.
export interface FileStatus {
    uri: string;
    state: 'analysing' | 'done';
    breaks?: number;
    notAnalysed?: string[];
    message?: string;
    cached?: boolean; // from gbls's cache of an earlier session, until its analysis runs again
    // An analysis that reached the file last time runs again: what it shows may change.
    rechecking?: boolean;
    // The file's compiled functions whose breaks are in other files (a model compiled here).
    elsewhere?: { function: string; breaks: number; files: string[] }[];
    // The program was still running when the budget (gbls.timeout) ended: gbls cut it there.
    cut?: { seconds: number; where: string; message: string } | null;
}

export type Phase =
    | { kind: 'untrusted' }
    | { kind: 'disabled' }
    | { kind: 'outside' }
    | { kind: 'problem'; reason: string; message: string }
    | { kind: 'starting' }
    | { kind: 'running' }
    | { kind: 'stopped' };

export interface StatusView {
    text: string;
    tooltip: string;
    command: string; // run on click
    arguments?: unknown[];
}

const REPORT = 'gbls.showBreakReport';
const RESTART = 'gbls.restart';

function notAnalysed(reason: string, tooltip: string, command: string, args?: unknown[]): StatusView {
    return { text: `$(circle-slash) gbls: not analysed (${reason})`, tooltip, command, arguments: args };
}

function plural(count: number, word: string): string {
    return `${count} ${word}${count === 1 ? '' : 's'}`;
}

// A one-line reason out of the worker's message, which can be a traceback's last lines.
function shortReason(message: string): string {
    const line = message.split('\n').find((part) => part.trim() !== '') ?? message;
    return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

// What the status bar keeps of a file on a new notification: while a file that has a result is
// analysed again, that result, marked as being re-checked (no flash of "analysing…" or of a stale
// count shown as current).
export function received(previous: FileStatus | undefined, status: FileStatus): FileStatus {
    if (status.state === 'analysing' && previous?.state === 'done' && !previous.message) {
        return { ...previous, rechecking: true };
    }
    return status;
}

export function statusView(phase: Phase, file: FileStatus | undefined): StatusView {
    switch (phase.kind) {
        case 'untrusted':
            return notAnalysed(
                'workspace not trusted',
                'gbls runs the file to analyse it: trust this workspace to turn it on.',
                'workbench.trust.manage',
            );
        case 'disabled':
            return notAnalysed('disabled', 'gbls.enable is off.', 'workbench.action.openSettings', ['gbls.enable']);
        case 'outside':
            return notAnalysed(
                'not in a workspace folder',
                "In a workspace of several folders, gbls analyses each folder's files with that folder's interpreter, and this file is in none of them. Click to add its folder to the workspace.",
                'workbench.action.addRootFolder',
            );
        case 'problem':
            return notAnalysed(phase.reason, `${phase.message}\n\nClick to try again.`, RESTART);
        case 'stopped':
            return notAnalysed('server stopped', 'The gbls server stopped. Click to restart it.', RESTART);
        case 'starting':
            if (file?.cached) {
                break; // the last window's result, until the server's own
            }
            return {
                text: '$(sync~spin) gbls: starting…',
                tooltip: 'Starting the gbls server.',
                command: 'gbls.showOutput',
            };
        case 'running':
            break;
    }
    if (file === undefined) {
        return {
            text: '$(circle-outline) gbls: not analysed yet',
            tooltip: 'gbls analyses a Python file when it is opened, edited or saved. Click to analyse it now.',
            command: 'gbls.analyseCurrentFile',
        };
    }
    if (file.state === 'analysing') {
        return {
            text: '$(sync~spin) gbls: analysing…',
            tooltip: 'gbls is running this file under Dynamo.',
            command: REPORT,
        };
    }
    if (file.message) {
        return notAnalysed(shortReason(file.message), file.message, 'gbls.showOutput');
    }
    const breaks = file.breaks ?? 0;
    const skipped = file.notAnalysed ?? [];
    const elsewhere = file.elsewhere ?? [];
    let text =
        breaks === 0
            ? `$(check) gbls: no ${elsewhere.length > 0 ? 'breaks' : 'graph breaks'} in this file`
            : `$(warning) gbls: ${plural(breaks, 'graph break')} in this file`;
    for (const other of elsewhere) {
        const are = other.breaks === 1 ? 'is' : 'are';
        text += `; ${other.function}'s ${plural(other.breaks, 'break')} ${are} in ${other.files.join(', ')}`;
    }
    let tooltip = 'Click for the break report.';
    if (skipped.length > 0) {
        text += ` · ${skipped.length} not analysed`;
        tooltip = `Not analysed: ${skipped.join(', ')}. Hover the function for why.\n\n${tooltip}`;
    }
    if (file.cut) {
        text += ` · cut at ${file.cut.seconds} s`;
        tooltip = `The run was ${file.cut.message}.\n\n${tooltip}`;
    }
    if (file.rechecking) {
        text += ' · re-checking…';
        tooltip = `An analysis that reached this file runs again: this may change.\n\n${tooltip}`;
    }
    if (file.cached) {
        text += ' (cached)';
        tooltip = `From gbls's cache of an earlier analysis: the file is being analysed again.\n\n${tooltip}`;
    }
    return { text, tooltip, command: REPORT };
}
