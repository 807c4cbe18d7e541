import * as assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import { test } from 'node:test';
import { DEBUG_PORT_VARIABLE, debugPort, noDebugpy, serverCommand } from '../debug';

const PYTHON = process.env.GBLS_PYTHON ?? 'python3';
const SCRIPT = path.resolve(__dirname, '..', '..', 'tool', 'gbls_server.py');

function hasDebugpy(): boolean {
    try {
        execFileSync(PYTHON, ['-c', 'import debugpy'], { stdio: 'ignore' });
        return true;
    } catch {
        return false;
    }
}

test('GBLS_DEBUG_PORT: a port, nothing, or not a port', () => {
    assert.equal(debugPort({ [DEBUG_PORT_VARIABLE]: '5678' }), 5678);
    assert.equal(debugPort({ [DEBUG_PORT_VARIABLE]: ' 5678 ' }), 5678);
    assert.equal(debugPort({}), undefined);
    assert.equal(debugPort({ [DEBUG_PORT_VARIABLE]: '' }), undefined);
    for (const bad of ['0', '65536', '56.5', 'x', '-1', '5678x']) {
        const port = debugPort({ [DEBUG_PORT_VARIABLE]: bad });
        assert.ok(port instanceof Error, bad);
        assert.match(port.message, /not a port \(1 to 65535\): the server runs without a debugger/);
    }
});

test('the server runs as the script, or under debugpy connecting to the port', () => {
    assert.deepEqual(serverCommand('/venv/bin/python', '/ext/tool/gbls_server.py', undefined), {
        command: '/venv/bin/python',
        args: ['/ext/tool/gbls_server.py'],
    });
    assert.deepEqual(serverCommand('/venv/bin/python', '/ext/tool/gbls_server.py', 5678), {
        command: '/venv/bin/python',
        // prettier-ignore
        args: ['-X', 'frozen_modules=off', '-m', 'debugpy', '--connect', '127.0.0.1:5678', '--wait-for-client',
            '/ext/tool/gbls_server.py'],
    });
    assert.match(
        noDebugpy('/venv/bin/python', 5678),
        /GBLS_DEBUG_PORT is 5678, but \/venv\/bin\/python has no debugpy/,
    );
    assert.match(noDebugpy('/venv/bin/python', 5678), /`\/venv\/bin\/python -m pip install debugpy`/);
});

// The command for real: debugpy takes its arguments, connects to whoever listens on the port (VS
// Code's "Python: Attach to gbls server" in launch.json), and holds the server until it is attached.
test(
    'under debugpy, the server connects to the debugger port',
    { skip: hasDebugpy() ? false : `${PYTHON} has no debugpy`, timeout: 120_000 },
    async () => {
        const listener = net.createServer();
        const connected = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
        await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
        const port = (listener.address() as net.AddressInfo).port;
        const { command, args } = serverCommand(PYTHON, SCRIPT, port);
        const server = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
        let stderr = '';
        server.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<number | null>((resolve) => server.once('exit', resolve));
        try {
            const socket = await Promise.race([
                connected,
                exited.then((code) => {
                    throw new Error(`the server exited (${code}) before connecting: ${stderr}`);
                }),
            ]);
            assert.equal(server.exitCode, null, 'the server waits for the debugger');
            socket.destroy();
        } finally {
            server.kill();
            listener.close();
        }
    },
);
