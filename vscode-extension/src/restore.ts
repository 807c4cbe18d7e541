// A folder server's results as its window showed them last (shown.ts), kept in the extension's
// workspace storage on every finished analysis, and shown again by the next window of the workspace
// from the moment the extension starts: the server takes a second or more to start and publish
// gbls's cache. They sit in a diagnostic collection of their own, which each file's first
// publication by the server replaces.

import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { decode, digestOf, encode, restoredStatus, ShownDiagnostic, ShownFile, ShownRange, unchanged } from './shown';
import { FileStatus } from './status';

// Statuses come one per file as a batch of analyses finishes: written once they have.
const SAVE_DELAY_MS = 500;

function toShownRange(range: vscode.Range): ShownRange {
    return { start: [range.start.line, range.start.character], end: [range.end.line, range.end.character] };
}

function toRange(range: ShownRange): vscode.Range {
    return new vscode.Range(range.start[0], range.start[1], range.end[0], range.end[1]);
}

function toShown(diagnostic: vscode.Diagnostic): ShownDiagnostic {
    const code = diagnostic.code;
    return {
        range: toShownRange(diagnostic.range),
        message: diagnostic.message,
        severity: diagnostic.severity,
        source: diagnostic.source,
        code: typeof code === 'object' ? code.value : code,
        codeTarget: typeof code === 'object' ? code.target.toString() : undefined,
        related: (diagnostic.relatedInformation ?? []).map((each) => ({
            uri: each.location.uri.toString(),
            range: toShownRange(each.location.range),
            message: each.message,
        })),
        tags: diagnostic.tags ?? [],
    };
}

function toDiagnostic(shown: ShownDiagnostic): vscode.Diagnostic {
    const diagnostic = new vscode.Diagnostic(toRange(shown.range), shown.message, shown.severity);
    diagnostic.source = shown.source;
    if (shown.code !== undefined) {
        diagnostic.code =
            shown.codeTarget === undefined
                ? shown.code
                : { value: shown.code, target: vscode.Uri.parse(shown.codeTarget) };
    }
    diagnostic.relatedInformation = shown.related.map(
        (each) =>
            new vscode.DiagnosticRelatedInformation(
                new vscode.Location(vscode.Uri.parse(each.uri), toRange(each.range)),
                each.message,
            ),
    );
    diagnostic.tags = shown.tags;
    return diagnostic;
}

// Read at once: the extension host's other extensions start beside gbls (git's takes seconds), and
// what is read synchronously in the extension's start shows before them.
function bytesOf(uri: string): Uint8Array | undefined {
    try {
        return fs.readFileSync(vscode.Uri.parse(uri).fsPath);
    } catch {
        return undefined;
    }
}

export class LastShown implements vscode.Disposable {
    private readonly restored = vscode.languages.createDiagnosticCollection('gbls-last-window');
    private readonly file: string | undefined;
    private timer: NodeJS.Timeout | undefined;

    // `storage`: the extension's storage for this workspace (none for a window without a folder);
    // `key`: the client plan's, so that each folder's server keeps its own.
    constructor(storage: vscode.Uri | undefined, key: string) {
        const name = createHash('sha256').update(key).digest('hex').slice(0, 16);
        this.file = storage && path.join(storage.fsPath, `shown-${name}.json`);
    }

    // Shows again the diagnostics kept of the files whose text is unchanged, except where
    // `published` says the server was first: how many files show again, and their statuses, marked
    // cached.
    restore(published: (uri: vscode.Uri) => boolean): { files: number; statuses: FileStatus[] } {
        const statuses: FileStatus[] = [];
        let text: string;
        try {
            text = this.file === undefined ? '' : fs.readFileSync(this.file, 'utf8');
        } catch {
            text = ''; // nothing kept yet
        }
        let files = 0;
        for (const file of unchanged(decode(text), bytesOf)) {
            const uri = vscode.Uri.parse(file.uri);
            if (published(uri)) {
                continue;
            }
            files += 1;
            if (file.diagnostics.length > 0) {
                this.restored.set(uri, file.diagnostics.map(toDiagnostic));
            }
            if (file.status !== undefined) {
                statuses.push(restoredStatus(file.status));
            }
        }
        return { files, statuses };
    }

    // The server published the file: its own diagnostics from now on.
    replaced(uri: vscode.Uri): void {
        this.restored.delete(uri);
    }

    // A new analysis is done: what it did not publish again is not shown any more, except in the
    // files still open, whose own analyses replace them. The files dropped.
    keepOnly(open: (uri: vscode.Uri) => boolean): vscode.Uri[] {
        const dropped: vscode.Uri[] = [];
        this.restored.forEach((uri) => {
            if (!open(uri)) {
                dropped.push(uri);
            }
        });
        for (const uri of dropped) {
            this.restored.delete(uri);
        }
        return dropped;
    }

    clear(): void {
        this.restored.clear();
    }

    // Keeps what the window shows (the server's diagnostics, by file, `published`, and those shown
    // again not yet replaced; the `statuses` by URI) once the analyses finishing now have; files
    // edited and not saved are left out.
    saveSoon(published: vscode.DiagnosticCollection | undefined, statuses: () => FileStatus[]): void {
        if (this.file === undefined) {
            return;
        }
        clearTimeout(this.timer);
        this.timer = setTimeout(() => {
            const shown: [vscode.Uri, readonly vscode.Diagnostic[]][] = [];
            for (const collection of [published, this.restored]) {
                collection?.forEach((uri, diagnostics) => {
                    shown.push([uri, diagnostics]);
                });
            }
            void this.save(this.file as string, shown, statuses());
        }, SAVE_DELAY_MS);
    }

    private async save(
        file: string,
        diagnostics: [vscode.Uri, readonly vscode.Diagnostic[]][],
        statuses: FileStatus[],
    ): Promise<void> {
        const byUri = new Map<string, { diagnostics: ShownDiagnostic[]; status?: FileStatus }>();
        for (const [uri, found] of diagnostics) {
            if (uri.scheme === 'file' && found.length > 0) {
                byUri.set(uri.toString(), { diagnostics: found.map(toShown) });
            }
        }
        for (const status of statuses) {
            if (status.state === 'done' && status.uri.startsWith('file:')) {
                const entry = byUri.get(status.uri) ?? { diagnostics: [] };
                byUri.set(status.uri, { ...entry, status });
            }
        }
        const dirty = new Set(
            vscode.workspace.textDocuments
                .filter((document) => document.isDirty)
                .map((document) => document.uri.toString()),
        );
        const files: ShownFile[] = [];
        for (const [uri, entry] of byUri) {
            const bytes = dirty.has(uri)
                ? undefined
                : await fs.promises.readFile(vscode.Uri.parse(uri).fsPath).catch(() => undefined);
            if (bytes !== undefined) {
                files.push({ uri, digest: digestOf(bytes), ...entry });
            }
        }
        try {
            await fs.promises.mkdir(path.dirname(file), { recursive: true });
            const written = `${file}.${process.pid}.tmp`; // renamed over it: a reader never sees half
            await fs.promises.writeFile(written, encode(files));
            await fs.promises.rename(written, file);
        } catch {
            // Only the next window's head start is lost.
        }
    }

    dispose(): void {
        clearTimeout(this.timer);
        this.restored.dispose();
    }
}
