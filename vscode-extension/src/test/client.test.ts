// The real vscode-languageclient, started on a fake VS Code against an in-memory server: what the
// gbls server is told at initialize (its folder, its interpreter, the trace), and how the trace
// follows gbls.trace.server.
import * as fake from './fake-vscode';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import { TRACE_CHANNEL, TraceChannel, traceSetting } from '../channels';
import { CLIENT_ID, clientName, clientOptions, ClientOptions, serverOptions } from '../client';
import { planClients } from '../folders';
import { inMemoryServer } from './memory-server';

const FOLDERS = [
    { uri: 'file:///work/a', name: 'a' },
    { uri: 'file:///work/b', name: 'b' },
];

function options(index: number, trace: vscode.LogOutputChannel): ClientOptions {
    const plan = planClients(FOLDERS)[index];
    const uri = fake.Uri.parse(FOLDERS[index].uri) as unknown as vscode.Uri;
    return {
        interpreter: `/envs/${FOLDERS[index].name}/bin/python`,
        extensionPath: '/ext',
        plan,
        folder: { uri, name: FOLDERS[index].name, index },
        output: new fake.FakeLogOutputChannel('gbls'),
        trace,
        debugPort: undefined,
        published: () => undefined,
    };
}

function traceChannel(sink: fake.FakeOutputChannel): TraceChannel {
    return new TraceChannel(
        () => sink,
        'b',
        () => traceSetting(fake.workspace.getConfiguration('gbls')),
    );
}

async function until(what: string, condition: () => boolean): Promise<void> {
    for (let tries = 0; !condition(); tries++) {
        assert.ok(tries < 2000, `never: ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
    }
}

test('the server runs with the folder interpreter, in the folder', () => {
    const sink = new fake.FakeOutputChannel(TRACE_CHANNEL);
    const server = serverOptions(options(1, traceChannel(sink)));
    assert.deepEqual(server, {
        command: '/envs/b/bin/python',
        args: [path.join('/ext', 'tool', 'gbls_server.py')],
        options: { cwd: '/work/b' },
    });
    assert.equal(clientName(planClients(FOLDERS)[1]), 'gbls (b)');
    assert.equal(clientName(planClients(FOLDERS.slice(0, 1))[0]), 'gbls');
});

test('initialize names the folder alone and its interpreter; gbls.trace.server switches the trace', async () => {
    fake.settings.clear();
    fake.setSetting('gbls.trace.server', 'verbose');
    const sink = new fake.FakeOutputChannel(TRACE_CHANNEL);
    const trace = traceChannel(sink);
    const { server, transports } = inMemoryServer({ textDocumentSync: 1 });
    const client = new LanguageClient(CLIENT_ID, 'gbls (b)', transports, clientOptions(options(1, trace)));
    await client.start();
    const params = await server.initialize;

    assert.deepEqual(params.workspaceFolders, [{ uri: 'file:///work/b', name: 'b' }]);
    assert.equal(params.rootUri, 'file:///work/b');
    const gbls = (params.initializationOptions as { gbls: { interpreter: string } }).gbls;
    assert.equal(gbls.interpreter, '/envs/b/bin/python');
    assert.equal(params.trace, 'verbose');
    assert.ok(fake.configurationRequests.includes(CLIENT_ID), 'the client reads its own section');
    assert.match(sink.lines.join('\n'), /^[\d:.]+ \[b\] Sending request 'initialize - \(0\)'\.\nParams: \{/m);

    fake.setSetting('gbls.trace.server', 'off');
    trace.refresh();
    await until('$/setTrace off', () => server.setTrace.includes('off'));
    const lines = sink.lines.length;
    await client.sendNotification('workspace/didChangeConfiguration', { settings: null });
    assert.equal(sink.lines.length, lines, 'no trace once off');

    fake.setSetting('gbls.trace.server', 'messages');
    trace.refresh();
    await until('$/setTrace messages', () => server.setTrace.at(-1) === 'messages');
    await client.sendNotification('workspace/didChangeConfiguration', { settings: null });
    await until('a traced notification', () =>
        sink.lines.some((line) => line.includes("Sending notification 'workspace/didChangeConfiguration'")),
    );
    assert.ok(!sink.lines.at(-1)?.includes('Params:'), 'messages: no params');

    await client.stop();
    server.connection.dispose();
});

test('gbls.trace.server is off by default: no trace channel at all', async () => {
    fake.settings.clear();
    let created = false;
    const trace = new TraceChannel(
        () => {
            created = true;
            return new fake.FakeOutputChannel(TRACE_CHANNEL);
        },
        undefined,
        () => traceSetting(fake.workspace.getConfiguration('gbls')),
    );
    const { server, transports } = inMemoryServer({});
    const client = new LanguageClient(CLIENT_ID, 'gbls', transports, clientOptions(options(0, trace)));
    await client.start();
    assert.equal((await server.initialize).trace, 'off');
    await client.stop();
    server.connection.dispose();
    assert.equal(created, false);
});

test("every server asks for every notebook: a folder's client syncs its own folder's", () => {
    const sink = new fake.FakeOutputChannel(TRACE_CHANNEL);
    const notebooks = clientOptions(options(1, traceChannel(sink))).notebookDocumentOptions;
    assert.ok(notebooks?.filterCells !== undefined);
    const cells = [{ index: 0 }] as unknown as vscode.NotebookCell[];
    const notebook = (uri: string) => ({ uri: fake.Uri.parse(uri) }) as unknown as vscode.NotebookDocument;
    assert.deepEqual(notebooks.filterCells(notebook('file:///work/b/n.ipynb'), cells), cells);
    assert.deepEqual(notebooks.filterCells(notebook('file:///work/a/n.ipynb'), cells), []);
});

// Unchanged, not an empty full report: the pulls' collection is named as the pushes', and an empty
// report would clear what the server pushed.
test('no pull of diagnostics reaches the server: it keeps pushing them, as the restored ones need', async () => {
    const sink = new fake.FakeOutputChannel(TRACE_CHANNEL);
    const middleware = clientOptions(options(0, traceChannel(sink))).middleware;
    const document = fake.Uri.parse('file:///work/a/train.py') as unknown as vscode.Uri;
    const asked: unknown[] = [];
    const token = { isCancellationRequested: false } as unknown as vscode.CancellationToken;
    const report = await middleware?.provideDiagnostics?.(document, undefined, token, (...given) => {
        asked.push(given);
        return undefined;
    });
    assert.deepEqual(report, { kind: 'unChanged', resultId: 'push' });
    const reporter = () => undefined;
    const workspace = await middleware?.provideWorkspaceDiagnostics?.([], token, reporter, (...given) => {
        asked.push(given);
        return undefined;
    });
    assert.deepEqual(workspace, { items: [] });
    assert.deepEqual(asked, []);
});
