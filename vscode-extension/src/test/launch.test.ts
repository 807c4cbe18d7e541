// .vscode/launch.json and tasks.json: debugging the extension and its server together.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { DEBUG_PORT_VARIABLE, debugPort } from '../debug';
import { manifest, ROOT } from './package-json';

interface Configuration {
    name: string;
    type: string;
    request: string;
    args?: string[];
    env?: Record<string, string>;
    preLaunchTask?: string;
    listen?: { host: string; port: number };
    subProcess?: boolean;
}

interface Launch {
    configurations: Configuration[];
    compounds: { name: string; configurations: string[]; preLaunchTask?: string }[];
}

interface Tasks {
    tasks: { label: string; command: string }[];
}

// VS Code's launch.json may have comments; these have them on lines of their own.
function jsonc<T>(file: string): T {
    const text = fs.readFileSync(path.join(ROOT, '.vscode', file), 'utf8');
    return JSON.parse(text.replace(/^\s*\/\/.*$/gm, '')) as T;
}

const launch = jsonc<Launch>('launch.json');
const tasks = jsonc<Tasks>('tasks.json');

function configuration(name: string): Configuration {
    const found = launch.configurations.find((each) => each.name === name);
    assert.ok(found, `no launch configuration "${name}"`);
    return found;
}

// ${workspaceFolder} is vscode-extension/, the folder opened to debug the extension.
function resolved(value: string): string {
    return path.resolve(value.split('${workspaceFolder}').join(ROOT));
}

test('"Debug Extension" runs this folder as the extension, on the fixture workspace, built first', () => {
    const debug = configuration('Debug Extension');
    assert.equal(debug.type, 'extensionHost');
    assert.deepEqual(debug.args, [
        '--extensionDevelopmentPath=${workspaceFolder}',
        '${workspaceFolder}/fixtures/workspace',
    ]);
    assert.ok(fs.existsSync(resolved('${workspaceFolder}/fixtures/workspace')));
    assert.equal(debug.env?.[DEBUG_PORT_VARIABLE], undefined, 'on its own, the server runs as usual');
    assert.ok(tasks.tasks.some((task) => task.label === debug.preLaunchTask));
});

test('the compound: VS Code listens where GBLS_DEBUG_PORT tells the server to connect', () => {
    const compound = launch.compounds.find((each) => each.name === 'Debug Extension and gbls server');
    assert.ok(compound);
    const [attach, host] = compound.configurations.map(configuration);
    assert.equal(attach.type, 'debugpy');
    assert.equal(attach.request, 'attach');
    assert.equal(host.type, 'extensionHost');
    assert.deepEqual(host.args, configuration('Debug Extension').args);
    assert.equal(debugPort(host.env ?? {}), attach.listen?.port);
    assert.equal(attach.listen?.host, '127.0.0.1', 'where the server connects (debug.ts)');
    assert.equal(attach.subProcess, false, 'the torch worker is not debugged');
    assert.ok(tasks.tasks.some((task) => task.label === compound.preLaunchTask));
});

// The script for real, in a copy of the layout it expects: the pinned libraries already there (so
// no pip), the checkout's gbls beside the extension.
test("the build task links the checkout's gbls where the server imports it from: breakpoints hold", () => {
    const top = fs.mkdtempSync(path.join(os.tmpdir(), 'gbls-link-'));
    try {
        fs.mkdirSync(path.join(top, 'gbls'));
        fs.writeFileSync(path.join(top, 'gbls', 'server.py'), '# the checkout\n');
        fs.mkdirSync(path.join(top, 'vscode-extension', 'scripts'), { recursive: true });
        fs.copyFileSync(
            path.join(ROOT, 'scripts', 'bundle-libs.sh'),
            path.join(top, 'vscode-extension', 'scripts', 'bundle-libs.sh'),
        );
        const libs = path.join(top, 'vscode-extension', 'bundled', 'libs');
        fs.mkdirSync(path.join(libs, 'pygls'), { recursive: true });
        fs.mkdirSync(path.join(libs, 'gbls')); // a copy from an earlier full bundle
        execFileSync('sh', [path.join(top, 'vscode-extension', 'scripts', 'bundle-libs.sh'), '--link-gbls']);
        assert.ok(fs.lstatSync(path.join(libs, 'gbls')).isSymbolicLink());
        assert.equal(fs.realpathSync(path.join(libs, 'gbls')), fs.realpathSync(path.join(top, 'gbls')));
        assert.equal(fs.readFileSync(path.join(libs, 'gbls', 'server.py'), 'utf8'), '# the checkout\n');
        assert.ok(fs.existsSync(path.join(libs, 'pygls')), 'the pinned libraries stay');
    } finally {
        fs.rmSync(top, { recursive: true, force: true });
    }
    // Where tool/gbls_server.py imports gbls from.
    assert.match(fs.readFileSync(path.join(ROOT, 'tool', 'gbls_server.py'), 'utf8'), /"bundled", "libs"/);
});

test('the build task: the npm build script, then the link', () => {
    const build = tasks.tasks.find((task) => task.label === 'gbls: build');
    assert.ok(build);
    assert.equal(build.command, 'npm run build && sh scripts/bundle-libs.sh --link-gbls');
    assert.ok('build' in manifest.scripts);
});
