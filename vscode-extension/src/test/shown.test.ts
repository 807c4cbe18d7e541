import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { decode, digestOf, encode, restoredStatus, ShownFile, unchanged } from '../shown';
import { statusView } from '../status';

const MODEL = 'file:///work/model.py';
const TRAIN = 'file:///work/train.py';
const TEXT = new TextEncoder().encode('print("hi")\n');

function shown(uri: string, text: Uint8Array = TEXT): ShownFile {
    return {
        uri,
        digest: digestOf(text),
        diagnostics: [
            {
                range: { start: [3, 8], end: [3, 30] },
                message: 'Failed to trace builtin operator',
                severity: 1,
                source: 'gbls',
                code: 'GB0098',
                codeTarget: 'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0098.html',
                related: [{ uri: TRAIN, range: { start: [10, 0], end: [10, 5] }, message: 'compiled here' }],
                tags: [],
            },
        ],
        status: { uri, state: 'done', breaks: 1, notAnalysed: [], message: '' },
    };
}

test('what a window showed comes back as it was written', () => {
    const files = [shown(MODEL), { ...shown(TRAIN), diagnostics: [], status: undefined }];
    assert.deepEqual(decode(encode(files)), JSON.parse(JSON.stringify(files)));
});

test('a stored text that does not fit is dropped, file by file', () => {
    for (const text of ['', 'not json', '[]', '{"version": 2, "files": []}', '{"version": 1, "files": {}}']) {
        assert.deepEqual(decode(text), [], text);
    }
    const good = shown(MODEL);
    const bad: unknown[] = [
        { ...good, uri: 'untitled:Untitled-1' },
        { ...good, digest: 3 },
        { ...good, diagnostics: [{ ...good.diagnostics[0], range: { start: [-1, 0], end: [0, 0] } }] },
        { ...good, diagnostics: [{ ...good.diagnostics[0], message: undefined }] },
        { ...good, status: { ...good.status, state: 'analysing' } },
        { ...good, status: { ...good.status, uri: TRAIN } },
    ];
    const text = JSON.stringify({ version: 1, files: [...bad, good] });
    assert.deepEqual(decode(text), [good]);
});

test('only the files whose text is unchanged show again', () => {
    const files = [shown(MODEL), shown(TRAIN)];
    const disk = new Map([
        [MODEL, TEXT],
        [TRAIN, new TextEncoder().encode('print("edited")\n')],
    ]);
    const kept = unchanged(files, (uri) => disk.get(uri));
    assert.deepEqual(
        kept.map((file) => file.uri),
        [MODEL],
    );
    assert.deepEqual(
        unchanged(files, () => undefined),
        [],
    );
});

test("while the server starts, the status bar shows the last window's count, marked cached", () => {
    const status = restoredStatus({ ...shown(MODEL).status!, rechecking: true });
    assert.equal(status.cached, true);
    assert.equal(status.rechecking, false);
    assert.equal(statusView({ kind: 'starting' }, status).text, '$(warning) gbls: 1 graph break in this file (cached)');
    assert.equal(statusView({ kind: 'starting' }, undefined).text, '$(sync~spin) gbls: starting…');
    const fresh = { ...status, cached: false };
    assert.equal(statusView({ kind: 'starting' }, fresh).text, '$(sync~spin) gbls: starting…');
});
