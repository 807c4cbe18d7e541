import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { Configuration, expandPath, readSettings, RESTART_KEYS, serverSettings } from '../settings';

interface Property {
    default: unknown;
}

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
const properties: Record<string, Property> = manifest.contributes.configuration.properties;

// What vscode.workspace.getConfiguration('gbls') answers: the user's values over the contributed defaults.
function configuration(values: Record<string, unknown> = {}): Configuration {
    return {
        get<T>(key: string): T | undefined {
            const property = properties[`gbls.${key}`];
            return (key in values ? values[key] : property?.default) as T | undefined;
        },
    };
}

test('every contributed setting is sent to the server, and nothing else', () => {
    const sent = Object.keys(readSettings(configuration())).map((key) => `gbls.${key}`);
    assert.deepEqual(sent.sort(), Object.keys(properties).sort());
});

test('the defaults are the server defaults', () => {
    assert.deepEqual(readSettings(configuration()), {
        enable: true,
        interpreter: '',
        timeout: 20,
        memoryMb: 4096,
        debounceMs: 750,
        severity: 'warning',
        analyseOnChange: true,
        runMain: true,
        sandbox: 'auto',
    });
});

test("the user's values are sent as they are", () => {
    const settings = readSettings(configuration({ severity: 'error', timeout: 5, runMain: false, sandbox: 'off' }));
    assert.equal(settings.severity, 'error');
    assert.equal(settings.timeout, 5);
    assert.equal(settings.runMain, false);
    assert.equal(settings.sandbox, 'off');
});

test('the server is told the interpreter it runs with, whatever gbls.interpreter says', () => {
    const settings = serverSettings(configuration({ interpreter: '' }), '/venv/bin/python');
    assert.equal(settings.interpreter, '/venv/bin/python');
});

test('a setting without a value is a packaging error, not a silent default', () => {
    const empty: Configuration = { get: () => undefined };
    assert.throws(() => readSettings(empty), /gbls.enable has no value/);
});

test('the settings that restart the server are contributed ones', () => {
    for (const key of RESTART_KEYS) {
        assert.ok(`gbls.${key}` in properties, key);
    }
});

test('gbls.interpreter expands ~ and ${workspaceFolder}', () => {
    assert.equal(expandPath('~/venv/bin/python', '/work', '/home/me'), '/home/me/venv/bin/python');
    assert.equal(expandPath('${workspaceFolder}/.venv/bin/python', '/work', '/home/me'), '/work/.venv/bin/python');
    assert.equal(expandPath('  /usr/bin/python3 ', '/work', '/home/me'), '/usr/bin/python3');
    assert.equal(expandPath('~other/python', '/work', '/home/me'), '~other/python');
    assert.equal(expandPath('${workspaceFolder}/python', undefined, '/home/me'), '${workspaceFolder}/python');
});
