// What a window showed last of a folder's files (each file's diagnostics and status), as the
// extension keeps it in its workspace storage: a reopened window shows it at once, marked cached,
// while the server starts and its own results (gbls's cache, or a new analysis) replace it. A file
// is shown again only while its text is the one the diagnostics were on. The stored JSON is read
// back as untrusted: whatever does not fit is dropped. No vscode import: unit-tested under node.

import { createHash } from 'node:crypto';
import { FileStatus } from './status';

const VERSION = 1;

export interface ShownRange {
    start: [number, number]; // line, character
    end: [number, number];
}

export interface ShownDiagnostic {
    range: ShownRange;
    message: string;
    severity: number; // vscode.DiagnosticSeverity
    source?: string;
    code?: string | number;
    codeTarget?: string; // the code's link
    related: { uri: string; range: ShownRange; message: string }[];
    tags: number[];
}

export interface ShownFile {
    uri: string; // a file: URI
    digest: string; // of the file's bytes when it was shown
    diagnostics: ShownDiagnostic[];
    status?: FileStatus; // for a file the server reported on (an open one)
}

export function digestOf(bytes: Uint8Array): string {
    return createHash('sha256').update(bytes).digest('hex');
}

export function encode(files: ShownFile[]): string {
    return JSON.stringify({ version: VERSION, files });
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isPosition(value: unknown): value is [number, number] {
    return Array.isArray(value) && value.length === 2 && value.every((n) => Number.isInteger(n) && n >= 0);
}

function isRange(value: unknown): value is ShownRange {
    return isObject(value) && isPosition(value.start) && isPosition(value.end);
}

function isDiagnostic(value: unknown): value is ShownDiagnostic {
    return (
        isObject(value) &&
        isRange(value.range) &&
        typeof value.message === 'string' &&
        Number.isInteger(value.severity) &&
        (value.source === undefined || typeof value.source === 'string') &&
        (value.code === undefined || typeof value.code === 'string' || typeof value.code === 'number') &&
        (value.codeTarget === undefined || typeof value.codeTarget === 'string') &&
        Array.isArray(value.related) &&
        value.related.every(
            (each) =>
                isObject(each) &&
                typeof each.uri === 'string' &&
                isRange(each.range) &&
                typeof each.message === 'string',
        ) &&
        Array.isArray(value.tags) &&
        value.tags.every((tag) => Number.isInteger(tag))
    );
}

function isStatus(value: unknown): value is FileStatus {
    return (
        isObject(value) &&
        typeof value.uri === 'string' &&
        value.state === 'done' &&
        (value.breaks === undefined || Number.isInteger(value.breaks)) &&
        (value.message === undefined || typeof value.message === 'string') &&
        (value.notAnalysed === undefined ||
            (Array.isArray(value.notAnalysed) && value.notAnalysed.every((each) => typeof each === 'string'))) &&
        (value.elsewhere === undefined ||
            (Array.isArray(value.elsewhere) &&
                value.elsewhere.every(
                    (each) =>
                        isObject(each) &&
                        typeof each.function === 'string' &&
                        Number.isInteger(each.breaks) &&
                        Array.isArray(each.files) &&
                        each.files.every((file) => typeof file === 'string'),
                )))
    );
}

function isFile(value: unknown): value is ShownFile {
    return (
        isObject(value) &&
        typeof value.uri === 'string' &&
        value.uri.startsWith('file:') &&
        typeof value.digest === 'string' &&
        Array.isArray(value.diagnostics) &&
        value.diagnostics.every(isDiagnostic) &&
        (value.status === undefined || (isStatus(value.status) && value.status.uri === value.uri))
    );
}

// The files of a stored text; none if it is not what `encode` wrote.
export function decode(text: string): ShownFile[] {
    let found: unknown;
    try {
        found = JSON.parse(text);
    } catch {
        return [];
    }
    if (!isObject(found) || found.version !== VERSION || !Array.isArray(found.files)) {
        return [];
    }
    return found.files.filter(isFile);
}

// The files whose text is still the one they were shown on (`read`: a file's bytes, undefined if
// it cannot be read).
export function unchanged(files: ShownFile[], read: (uri: string) => Uint8Array | undefined): ShownFile[] {
    return files.filter((file) => {
        const bytes = read(file.uri);
        return bytes !== undefined && digestOf(bytes) === file.digest;
    });
}

// A status shown again: the earlier window's result, from the cache, until the server's own.
export function restoredStatus(status: FileStatus): FileStatus {
    return { ...status, cached: true, rechecking: false };
}
