import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import {
    CLIENT_SETTINGS,
    Configuration,
    expandPath,
    PathVariables,
    readSettings,
    RESTART_KEYS,
    serverSettings,
    unresolved,
} from '../settings';
import { manifest } from './package-json';

const properties = manifest.contributes.configuration.properties;

// What vscode.workspace.getConfiguration('gbls') answers: the user's values over the contributed defaults.
function configuration(values: Record<string, unknown> = {}): Configuration {
    return {
        get<T>(key: string): T | undefined {
            const property = properties[`gbls.${key}`];
            return (key in values ? values[key] : property?.default) as T | undefined;
        },
    };
}

test("every contributed setting is sent to the server, and nothing else, but the client's own", () => {
    const sent = Object.keys(readSettings(configuration())).map((key) => `gbls.${key}`);
    const own = CLIENT_SETTINGS.map((key) => `gbls.${key}`);
    assert.deepEqual([...sent, ...own].sort(), Object.keys(properties).sort());
    assert.ok(!sent.some((key) => own.includes(key)));
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
        device: 'auto',
        values: 'auto',
        severityOverrides: {},
        ignore: [],
        traces: [],
        inlayHints: true,
    });
});

test("the user's values are sent as they are", () => {
    const settings = readSettings(
        configuration({
            severity: 'error',
            timeout: 5,
            runMain: false,
            sandbox: 'off',
            device: 'cpu',
            values: 'exact',
            severityOverrides: { GB0124: 'error' },
            ignore: ['GB0170'],
        }),
    );
    assert.equal(settings.severity, 'error');
    assert.equal(settings.timeout, 5);
    assert.equal(settings.runMain, false);
    assert.equal(settings.sandbox, 'off');
    assert.equal(settings.device, 'cpu');
    assert.equal(settings.values, 'exact');
    assert.deepEqual(settings.severityOverrides, { GB0124: 'error' });
    assert.deepEqual(settings.ignore, ['GB0170']);
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

const variables: PathVariables = {
    home: '/home/me',
    folder: '/work/a',
    folders: [
        { name: 'a', path: '/work/a' },
        { name: 'b tools', path: '/work/b' },
    ],
};

test('gbls.interpreter expands ~, ${userHome}, ${workspaceFolder} and ${workspaceFolder:name}', () => {
    assert.equal(expandPath('~/venv/bin/python', variables), '/home/me/venv/bin/python');
    assert.equal(expandPath('~', variables), '/home/me');
    assert.equal(expandPath('${userHome}/.venv/bin/python', variables), '/home/me/.venv/bin/python');
    assert.equal(expandPath('${workspaceFolder}/.venv/bin/python', variables), '/work/a/.venv/bin/python');
    assert.equal(expandPath('${workspaceFolder:b tools}/.venv/bin/python', variables), '/work/b/.venv/bin/python');
    assert.equal(
        expandPath('${workspaceFolder:a}/${workspaceFolder}/${userHome}', variables),
        '/work/a//work/a//home/me',
        'every occurrence',
    );
    assert.equal(expandPath('  /usr/bin/python3 ', variables), '/usr/bin/python3');
    assert.equal(expandPath('~other/python', variables), '~other/python', "another user's home is not ours");
    assert.equal(expandPath('/opt/~/python', variables), '/opt/~/python', 'only a leading ~');
});

test('a variable without a value stays, and is reported', () => {
    const noFolder = { ...variables, folder: undefined };
    assert.equal(expandPath('${workspaceFolder}/python', noFolder), '${workspaceFolder}/python');
    assert.equal(expandPath('${workspaceFolder:c}/python', variables), '${workspaceFolder:c}/python');
    assert.equal(expandPath('${env:HOME}/python', variables), '${env:HOME}/python');
    assert.equal(expandPath('${userHome:x}/python', variables), '${userHome:x}/python');
    assert.deepEqual(unresolved('${workspaceFolder:c}/${env:HOME}/python'), ['${workspaceFolder:c}', '${env:HOME}']);
    assert.deepEqual(unresolved(expandPath('${workspaceFolder}/python', variables)), []);
});
