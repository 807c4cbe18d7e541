// package.json is half of the extension: what VS Code reads before any code runs.
import './fake-vscode';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { CLIENT_SHOW_REPORT, SERVER_SHOW_REPORT } from '../lenses';
import { TRACE_SETTING } from '../channels';
import { CLIENT_ID } from '../client';
import { manifest, ROOT } from './package-json';

const root = ROOT;

// A folder with Python files at its top activates gbls as the window opens (as Ruff's extension
// does): a reopened window shows what the last one showed before a file is opened.
test('activates on Python files, Jupyter notebooks and Python folders, and runs the esbuild bundle', () => {
    assert.deepEqual(manifest.activationEvents, [
        'onLanguage:python',
        'onNotebook:jupyter-notebook',
        'workspaceContains:*.py',
    ]);
    assert.equal(manifest.main, './dist/extension.js');
});

test('limited in untrusted workspaces, where a workspace may not choose the interpreter', () => {
    const untrusted = manifest.capabilities.untrustedWorkspaces;
    assert.equal(untrusted.supported, 'limited');
    assert.deepEqual(untrusted.restrictedConfigurations, ['gbls.interpreter']);
});

test('the six commands, under the gbls category', () => {
    const titles = manifest.contributes.commands.map((c) => `${c.category}: ${c.title}`);
    assert.deepEqual(titles, [
        'gbls: Analyse current file',
        'gbls: Show break report',
        'gbls: Import trace…',
        'gbls: Restart server',
        'gbls: Show output',
        'gbls: Doctor: what this setup gives gbls',
    ]);
    const ids = manifest.contributes.commands.map((c) => c.command);
    assert.ok(ids.includes(CLIENT_SHOW_REPORT));
    // The language client registers the server's commands itself; a client command of the same id would clash.
    assert.ok(!ids.includes(SERVER_SHOW_REPORT));
});

test('the .vsix carries the bundle, the Python launcher and the bundled libraries', () => {
    const ignore = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8');
    for (const kept of ['!dist/extension.js', '!tool/*.py', '!bundled/libs/**']) {
        assert.ok(ignore.split('\n').includes(kept), kept);
    }
});

test('gbls.trace.server, as vscode-languageclient reads it for the client id gbls', () => {
    const trace = manifest.contributes.configuration.properties[`${CLIENT_ID}.${TRACE_SETTING}`];
    assert.deepEqual(trace.enum, ['off', 'messages', 'verbose']);
    assert.equal(trace.default, 'off');
    assert.equal(trace.scope, 'window', 'one trace for every client: the client reads it without a scope');
});
