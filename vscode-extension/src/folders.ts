// Which language client serves which documents. Each workspace folder has a client of its own,
// whose server runs with that folder's interpreter and is told of that folder only; its document
// selector is the folder's files. A folder inside another is served by the outer one's client
// (two selectors would both take its files). Untitled files go to the first client. A workspace
// of one folder (or none) keeps a single client for every Python file, inside the folder or not.
// No vscode import: unit-tested under node.

export interface Folder {
    readonly uri: string; // vscode.Uri.toString(), as the language client sends it
    readonly name: string;
}

// A RelativePattern: its base is taken literally, so a folder whose path holds glob characters
// ([, {, *) still matches.
export interface Pattern {
    readonly baseUri: string;
    readonly pattern: string;
}

// A protocol DocumentFilter, which vscode-languageclient converts to VS Code's: Python files, or the
// Python cells of Jupyter notebooks (analysed as one program per notebook, through the server's
// notebook sync).
export type DocumentFilter =
    | { readonly scheme: 'file' | 'untitled'; readonly language: 'python'; readonly pattern?: Pattern }
    | {
          readonly notebook:
              'jupyter-notebook' | { notebookType: 'jupyter-notebook'; scheme: 'file'; pattern: Pattern };
          readonly language: 'python';
      };

export interface ClientPlan {
    // What the client serves, as one string: a plan of a new key needs a new client.
    readonly key: string;
    readonly folder: Folder | undefined;
    // The folder's name in a multi-root workspace, to tell the clients' messages apart; else undefined.
    readonly label: string | undefined;
    readonly everyFile: boolean;
    readonly untitled: boolean;
    readonly documentSelector: DocumentFilter[];
}

// Whether the document `uri` is inside the folder `folder` (both as vscode.Uri.toString()).
export function inFolder(folder: string, uri: string): boolean {
    return uri.startsWith(folder.endsWith('/') ? folder : `${folder}/`);
}

function plan(
    folder: Folder | undefined,
    label: string | undefined,
    everyFile: boolean,
    untitled: boolean,
): ClientPlan {
    const pattern = everyFile || folder === undefined ? undefined : { baseUri: folder.uri, pattern: '**/*' };
    const selector: DocumentFilter[] =
        pattern === undefined
            ? [
                  { scheme: 'file', language: 'python' },
                  { notebook: 'jupyter-notebook', language: 'python' },
              ]
            : [
                  { scheme: 'file', language: 'python', pattern },
                  { notebook: { notebookType: 'jupyter-notebook', scheme: 'file', pattern }, language: 'python' },
              ];
    if (untitled) {
        selector.push({ scheme: 'untitled', language: 'python' });
    }
    const key = JSON.stringify([folder?.uri ?? null, label ?? null, everyFile, untitled]);
    return { key, folder, label, everyFile, untitled, documentSelector: selector };
}

export function planClients(folders: readonly Folder[]): ClientPlan[] {
    const outermost = folders.filter(
        (folder) => !folders.some((other) => other.uri !== folder.uri && inFolder(other.uri, folder.uri)),
    );
    if (outermost.length <= 1) {
        return [plan(outermost[0], undefined, true, true)];
    }
    return outermost.map((folder, index) => plan(folder, folder.name, false, index === 0));
}

// Whether the plan's client has the document or notebook `uri` (as vscode.Uri.toString()).
export function serves(plan: ClientPlan, uri: string): boolean {
    const scheme = uri.slice(0, uri.indexOf(':'));
    if (scheme === 'untitled') {
        return plan.untitled;
    }
    return scheme === 'file' && (plan.everyFile || (plan.folder !== undefined && inFolder(plan.folder.uri, uri)));
}

// The plan whose client has the document `uri`, as its selector decides; undefined: no client has it.
export function clientFor<P extends ClientPlan>(plans: readonly P[], uri: string): P | undefined {
    return plans.find((candidate) => serves(candidate, uri));
}
