// Two real language clients whose servers have the same commands, as the servers of two workspace
// folders do: one VS Code command each, routed by the document it names.
import * as fake from './fake-vscode';
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { LanguageClient, LanguageClientOptions } from 'vscode-languageclient/node';
import { ServerCommands } from '../commands';
import { clientFor, planClients } from '../folders';
import { inMemoryServer, Server } from './memory-server';

const FOLDERS = [
    { uri: 'file:///work/a', name: 'a' },
    { uri: 'file:///work/b', name: 'b' },
];
const COMMANDS = ['gbls.analyseFile', 'gbls.showReport', 'gbls.showLocation'];

function client(name: string): { client: LanguageClient; server: Server } {
    const { server, transports } = inMemoryServer({ executeCommandProvider: { commands: COMMANDS } }, name);
    const options: LanguageClientOptions = {
        outputChannel: new fake.FakeLogOutputChannel(name),
    };
    return { client: new LanguageClient('gbls', name, transports, options), server };
}

test('without ServerCommands, the second client does not start: its commands exist already', async () => {
    fake.registered.clear();
    const a = client('a');
    const b = client('b');
    await a.client.start();
    await assert.rejects(b.client.start(), /command 'gbls.analyseFile' already exists/);
    await a.client.stop();
    await b.client.stop().catch(() => undefined);
    assert.equal(fake.registered.size, 0);
});

test("each server command once, run by the server of the document it names, else the active editor's", async () => {
    fake.registered.clear();
    const a = client('a');
    const b = client('b');
    const plans = planClients(FOLDERS);
    let active: LanguageClient | undefined;
    const commands = new ServerCommands((uri) => {
        const plan = uri === undefined ? undefined : clientFor(plans, uri);
        return plan === undefined ? active : plan === plans[0] ? a.client : b.client;
    });
    commands.adopt(a.client);
    commands.adopt(b.client);
    await a.client.start();
    await b.client.start();
    assert.deepEqual([...fake.registered.keys()].sort(), [...COMMANDS].sort());

    const run = (...args: unknown[]) => fake.commands.executeCommand('gbls.showReport', ...args);
    assert.deepEqual(await run('file:///work/b/m.py', 'f'), ['b', 'file:///work/b/m.py', 'f']);
    assert.deepEqual(await run('file:///work/a/m.py'), ['a', 'file:///work/a/m.py']);
    active = b.client; // a file outside the folders: the client of the active editor
    assert.deepEqual(await run('file:///usr/lib/python3/site.py'), ['b', 'file:///usr/lib/python3/site.py']);
    active = undefined; // nothing to go by: the first client with the command
    assert.deepEqual(await fake.commands.executeCommand('gbls.showLocation', 42), ['a', 42]);

    await a.client.stop(); // the command stays, with b's server
    assert.deepEqual(await run('file:///work/a/m.py'), ['b', 'file:///work/a/m.py']);
    await b.client.stop();
    assert.equal(fake.registered.size, 0, 'no server, no command');
    const again = client('b'); // a restart: a new client for the folder
    commands.adopt(again.client);
    await again.client.start();
    assert.deepEqual(await run('file:///work/b/m.py'), ['b', 'file:///work/b/m.py']);
    commands.dispose();
    assert.equal(fake.registered.size, 0);
    await again.client.stop();
});
