import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientFor, inFolder, planClients, serves } from '../folders';

const a = { uri: 'file:///work/a', name: 'a' };
const b = { uri: 'file:///work/b', name: 'b' };

test('one folder, or none: one client for every Python file and untitled ones', () => {
    for (const folders of [[a], []]) {
        const plans = planClients(folders);
        assert.equal(plans.length, 1);
        assert.deepEqual(plans[0].documentSelector, [
            { scheme: 'file', language: 'python' },
            { notebook: 'jupyter-notebook', language: 'python' },
            { scheme: 'untitled', language: 'python' },
        ]);
        assert.equal(plans[0].label, undefined, 'one client: its messages need no folder name');
        assert.equal(clientFor(plans, 'file:///elsewhere/x.py'), plans[0], 'a file outside the folder too');
        assert.equal(clientFor(plans, 'untitled:Untitled-1'), plans[0]);
    }
    assert.equal(planClients([a])[0].folder, a);
    assert.equal(planClients([])[0].folder, undefined);
});

test("several folders: a client for each folder's files, the first has the untitled ones", () => {
    const [first, second] = planClients([a, b]);
    const inA = { baseUri: 'file:///work/a', pattern: '**/*' };
    const inB = { baseUri: 'file:///work/b', pattern: '**/*' };
    assert.deepEqual(first.documentSelector, [
        { scheme: 'file', language: 'python', pattern: inA },
        { notebook: { notebookType: 'jupyter-notebook', scheme: 'file', pattern: inA }, language: 'python' },
        { scheme: 'untitled', language: 'python' },
    ]);
    assert.deepEqual(second.documentSelector, [
        { scheme: 'file', language: 'python', pattern: inB },
        { notebook: { notebookType: 'jupyter-notebook', scheme: 'file', pattern: inB }, language: 'python' },
    ]);
    assert.deepEqual([first.label, second.label], ['a', 'b']);
    const plans = [first, second];
    assert.equal(clientFor(plans, 'file:///work/a/pkg/m.py'), first);
    assert.equal(clientFor(plans, 'file:///work/b/m.py'), second);
    assert.equal(clientFor(plans, 'untitled:Untitled-1'), first);
    assert.equal(clientFor(plans, 'file:///work/ab/m.py'), undefined, 'a sibling whose name starts the same');
    assert.equal(clientFor(plans, 'file:///elsewhere/m.py'), undefined, 'outside every folder');
    // A notebook is its folder's, as a file is; its cells go with it (the client syncs them).
    assert.equal(clientFor(plans, 'file:///work/b/n.ipynb'), second);
    assert.ok(serves(first, 'file:///work/a/n.ipynb') && !serves(second, 'file:///work/a/n.ipynb'));
});

test('a folder inside another is served by the outer one', () => {
    const inner = { uri: 'file:///work/a/sub', name: 'sub' };
    const plans = planClients([inner, a, b]);
    assert.deepEqual(
        plans.map((plan) => plan.folder),
        [a, b],
    );
    assert.equal(clientFor(plans, 'file:///work/a/sub/m.py'), plans[0]);
    assert.deepEqual(planClients([inner, a]).length, 1, 'one folder left: every file again');
});

test('a change of what a client serves changes its key; the same folders give the same keys', () => {
    const keys = (folders: (typeof a)[]) => planClients(folders).map((plan) => plan.key);
    assert.deepEqual(keys([a, b]), keys([a, b]));
    assert.notEqual(keys([a])[0], keys([a, b])[0], 'every file → its folder only: a new client');
    assert.notEqual(keys([a, b])[1], keys([b, a])[0], 'b gets the untitled files: a new client');
    assert.equal(keys([a, b])[0], keys([a, b, { uri: 'file:///work/c', name: 'c' }])[0], 'a runs on');
    assert.notEqual(keys([a, b])[0], keys([{ ...a, name: 'renamed' }, b])[0]);
});

test('inside a folder: by path segments, with or without a trailing slash', () => {
    assert.ok(inFolder('file:///work/a', 'file:///work/a/m.py'));
    assert.ok(inFolder('file:///work/a/', 'file:///work/a/m.py'));
    assert.ok(!inFolder('file:///work/a', 'file:///work/abc/m.py'));
    assert.ok(!inFolder('file:///work/a', 'file:///work/a'));
    // URIs as VS Code writes them: special characters percent-encoded alike in folder and file.
    assert.ok(inFolder('file:///work/my%20%5Bproject%5D', 'file:///work/my%20%5Bproject%5D/m.py'));
});
