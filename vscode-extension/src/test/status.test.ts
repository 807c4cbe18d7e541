import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { FileStatus, received, statusView } from '../status';

const running = { kind: 'running' } as const;
const uri = 'file:///work/model.py';

function done(status: Partial<FileStatus>): FileStatus {
    return { uri, state: 'done', breaks: 0, notAnalysed: [], message: '', ...status };
}

test('analysing, then the count of breaks in the file', () => {
    assert.equal(statusView(running, { uri, state: 'analysing' }).text, '$(sync~spin) gbls: analysing…');
    assert.equal(statusView(running, done({ breaks: 0 })).text, '$(check) gbls: no graph breaks in this file');
    assert.equal(statusView(running, done({ breaks: 1 })).text, '$(warning) gbls: 1 graph break in this file');
    assert.equal(statusView(running, done({ breaks: 3 })).text, '$(warning) gbls: 3 graph breaks in this file');
    assert.equal(statusView(running, done({ breaks: 3 })).command, 'gbls.showBreakReport');
});

test('a compile site whose graphs split in other files says where', () => {
    const elsewhere = [{ function: 'TinyNet', breaks: 2, files: ['model.py'] }];
    assert.equal(
        statusView(running, done({ breaks: 0, elsewhere })).text,
        "$(check) gbls: no breaks in this file; TinyNet's 2 breaks are in model.py",
    );
    const one = [{ function: 'step', breaks: 1, files: ['lib/ops.py'] }];
    assert.equal(
        statusView(running, done({ breaks: 1, elsewhere: one })).text,
        "$(warning) gbls: 1 graph break in this file; step's 1 break is in lib/ops.py",
    );
});

test('a file analysed again keeps its result, marked as being re-checked', () => {
    const before = done({ breaks: 2 });
    const kept = received(before, { uri, state: 'analysing' });
    assert.equal(statusView(running, kept).text, '$(warning) gbls: 2 graph breaks in this file · re-checking…');
    assert.match(statusView(running, kept).tooltip, /^An analysis that reached this file runs again/);
    // The server's own word, another analysis running: the same.
    const told = received(before, done({ breaks: 2, rechecking: true }));
    assert.equal(statusView(running, told).text, '$(warning) gbls: 2 graph breaks in this file · re-checking…');
    // A first analysis, or one after a failure, shows it runs.
    assert.equal(
        statusView(running, received(undefined, { uri, state: 'analysing' })).text,
        '$(sync~spin) gbls: analysing…',
    );
    const failed = done({ message: 'the module raised ValueError' });
    assert.equal(
        statusView(running, received(failed, { uri, state: 'analysing' })).text,
        '$(sync~spin) gbls: analysing…',
    );
    assert.equal(
        statusView(running, received(kept, done({ breaks: 0 }))).text,
        '$(check) gbls: no graph breaks in this file',
    );
});

test('functions that could not be run are counted and named', () => {
    const view = statusView(running, done({ breaks: 1, notAnalysed: ['Head', 'gate'] }));
    assert.equal(view.text, '$(warning) gbls: 1 graph break in this file · 2 not analysed');
    assert.match(view.tooltip, /^Not analysed: Head, gate\./);
});

test('results from the cache say so until the analysis behind them is done', () => {
    const view = statusView(running, done({ breaks: 2, cached: true }));
    assert.equal(view.text, '$(warning) gbls: 2 graph breaks in this file (cached)');
    assert.match(view.tooltip, /^From gbls's cache of an earlier analysis/);
    assert.equal(
        statusView(running, done({ breaks: 2, cached: false })).text,
        '$(warning) gbls: 2 graph breaks in this file',
    );
});

test('a file that could not be analysed says why, shortly', () => {
    const message =
        'the module raised ModuleNotFoundError: No module named "transformers_but_much_longer_than_the_bar"\nTraceback…';
    const view = statusView(running, done({ message }));
    assert.equal(
        view.text,
        '$(circle-slash) gbls: not analysed (the module raised ModuleNotFoundError: No module named "tra…)',
    );
    assert.equal(view.tooltip, message);
    assert.equal(view.command, 'gbls.showOutput');
});

test('not analysed yet: click to analyse', () => {
    const view = statusView(running, undefined);
    assert.equal(view.text, '$(circle-outline) gbls: not analysed yet');
    assert.equal(view.command, 'gbls.analyseCurrentFile');
});

test('before and without a server, the reason', () => {
    const untrusted = statusView({ kind: 'untrusted' }, undefined);
    assert.equal(untrusted.text, '$(circle-slash) gbls: not analysed (workspace not trusted)');
    assert.equal(untrusted.command, 'workbench.trust.manage');
    const disabled = statusView({ kind: 'disabled' }, undefined);
    assert.equal(disabled.text, '$(circle-slash) gbls: not analysed (disabled)');
    assert.deepEqual(disabled.arguments, ['gbls.enable']);
    const problem = statusView({ kind: 'problem', reason: 'no torch in the interpreter', message: 'm' }, undefined);
    assert.equal(problem.text, '$(circle-slash) gbls: not analysed (no torch in the interpreter)');
    assert.equal(problem.command, 'gbls.restart');
    assert.equal(statusView({ kind: 'starting' }, undefined).text, '$(sync~spin) gbls: starting…');
    assert.equal(statusView({ kind: 'stopped' }, undefined).command, 'gbls.restart');
    const outside = statusView({ kind: 'outside' }, undefined);
    assert.equal(outside.text, '$(circle-slash) gbls: not analysed (not in a workspace folder)');
    assert.match(outside.tooltip, /each folder's files with that folder's interpreter/);
    assert.equal(outside.command, 'workbench.action.addRootFolder');
});

test('a stale file status does not hide that the server is not running', () => {
    assert.equal(
        statusView({ kind: 'stopped' }, done({ breaks: 2 })).text,
        '$(circle-slash) gbls: not analysed (server stopped)',
    );
});

test('a program the budget cut says so beside its result: a note, not a failure', () => {
    const cut = { seconds: 20, where: 'train.py:309', message: 'cut after 20 s at train.py:309: the program was' };
    const view = statusView(running, done({ breaks: 0, cut }));
    assert.equal(view.text, '$(check) gbls: no graph breaks in this file · cut at 20 s');
    assert.match(view.tooltip, /^The run was cut after 20 s at train\.py:309/);
    assert.equal(view.command, 'gbls.showBreakReport');
});
