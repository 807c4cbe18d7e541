// The output channels the language clients write to. Every client shares the "gbls" log: in a
// multi-root workspace each line is headed by the folder's name. The protocol trace has a channel of
// its own, "gbls Trace", switched by gbls.trace.server.

import * as vscode from 'vscode';

export type TraceSetting = 'off' | 'messages' | 'verbose';
export const TRACE_SETTING = 'trace.server'; // gbls.trace.server: vscode-languageclient reads `${clientId}.trace.server`
export const TRACE_CHANNEL = 'gbls Trace';

export function traceSetting(configuration: { get<T>(section: string): T | undefined }): TraceSetting {
    const value = configuration.get<unknown>(TRACE_SETTING);
    return value === 'messages' || value === 'verbose' ? value : 'off';
}

function labelled(label: string | undefined, message: string): string {
    return label === undefined ? message : `[${label}] ${message}`;
}

// 14:03:07.042, local time: the trace channel is a plain one, without the log's timestamps.
export function clock(date: Date): string {
    const two = (value: number) => String(value).padStart(2, '0');
    const time = `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
    return `${time}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

// The shared log, as one client sees it: its lines headed by its folder's name.
export class LabelledLog implements vscode.LogOutputChannel {
    constructor(
        private readonly log: vscode.LogOutputChannel,
        private readonly label: string | undefined,
    ) {}

    get name(): string {
        return this.log.name;
    }
    get logLevel(): vscode.LogLevel {
        return this.log.logLevel;
    }
    get onDidChangeLogLevel(): vscode.Event<vscode.LogLevel> {
        return this.log.onDidChangeLogLevel;
    }
    trace(message: string, ...args: unknown[]): void {
        this.log.trace(labelled(this.label, message), ...args);
    }
    debug(message: string, ...args: unknown[]): void {
        this.log.debug(labelled(this.label, message), ...args);
    }
    info(message: string, ...args: unknown[]): void {
        this.log.info(labelled(this.label, message), ...args);
    }
    warn(message: string, ...args: unknown[]): void {
        this.log.warn(labelled(this.label, message), ...args);
    }
    error(error: string | Error, ...args: unknown[]): void {
        this.log.error(typeof error === 'string' ? labelled(this.label, error) : error, ...args);
    }
    append(value: string): void {
        this.log.append(value);
    }
    appendLine(value: string): void {
        this.log.appendLine(labelled(this.label, value));
    }
    replace(value: string): void {
        this.log.replace(value);
    }
    clear(): void {
        this.log.clear();
    }
    show(preserveFocus?: boolean): void;
    show(column?: vscode.ViewColumn, preserveFocus?: boolean): void;
    show(first?: boolean | vscode.ViewColumn, preserveFocus?: boolean): void {
        if (typeof first === 'boolean' || first === undefined) {
            this.log.show(first);
        } else {
            this.log.show(first, preserveFocus);
        }
    }
    hide(): void {
        this.log.hide();
    }
    dispose(): void {
        // The log is shared: the extension disposes of it.
    }
}

// The trace channel of one client. vscode-languageclient 10 traces only while its trace channel's
// log level is Trace, and then reads gbls.trace.server for messages or verbose (taking "off" for
// messages). Here the level follows gbls.trace.server, so the setting alone switches the trace,
// as in the template: off, no trace; messages or verbose, that trace in "gbls Trace", each line
// with its time and, in a multi-root workspace, the folder's name. refresh()
// tells the client of a change, and it sends $/setTrace to its server.
export class TraceChannel implements vscode.LogOutputChannel {
    private readonly changed = new vscode.EventEmitter<vscode.LogLevel>();
    readonly onDidChangeLogLevel = this.changed.event;

    constructor(
        private readonly sink: () => vscode.OutputChannel, // created on the first line
        private readonly label: string | undefined,
        private readonly setting: () => TraceSetting,
    ) {}

    get name(): string {
        return TRACE_CHANNEL;
    }
    get logLevel(): vscode.LogLevel {
        return this.setting() === 'off' ? vscode.LogLevel.Off : vscode.LogLevel.Trace;
    }
    refresh(): void {
        this.changed.fire(this.logLevel);
    }
    private write(message: string): void {
        if (this.logLevel !== vscode.LogLevel.Off) {
            this.sink().appendLine(`${clock(new Date())} ${labelled(this.label, message)}`);
        }
    }
    trace(message: string): void {
        this.write(message);
    }
    debug(message: string): void {
        this.write(message);
    }
    info(message: string): void {
        this.write(message);
    }
    warn(message: string): void {
        this.write(message);
    }
    error(error: string | Error): void {
        this.write(typeof error === 'string' ? error : String(error));
    }
    append(value: string): void {
        this.sink().append(value);
    }
    appendLine(value: string): void {
        this.write(value);
    }
    replace(value: string): void {
        this.sink().replace(value);
    }
    clear(): void {
        this.sink().clear();
    }
    show(preserveFocus?: boolean): void;
    show(column?: vscode.ViewColumn, preserveFocus?: boolean): void;
    show(first?: boolean | vscode.ViewColumn, preserveFocus?: boolean): void {
        if (typeof first === 'boolean' || first === undefined) {
            this.sink().show(first);
        } else {
            this.sink().show(first, preserveFocus);
        }
    }
    hide(): void {
        this.sink().hide();
    }
    dispose(): void {
        this.changed.dispose(); // the sink is shared: the extension disposes of it
    }
}
