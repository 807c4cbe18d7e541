import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { test } from 'node:test';
import {
    atLeast,
    checkProbe,
    noInterpreter,
    parseProbe,
    Probe,
    probeFailed,
    releaseOf,
    unknownVariables,
} from '../environment';

const PYTHON = process.env.GBLS_PYTHON ?? 'python3';

function probe(python: [number, number, number], torch: string | null): Probe {
    return { python, torch, executable: '/venv/bin/python', debugpy: false };
}

test('tool/probe.py reports the real interpreter', () => {
    const script = path.resolve(__dirname, '..', '..', 'tool', 'probe.py');
    const found = parseProbe(execFileSync(PYTHON, [script], { encoding: 'utf8' }));
    assert.ok(found.python[0] === 3, `Python ${found.python.join('.')}`);
    assert.ok(found.executable.length > 0);
    assert.ok(found.torch === null || releaseOf(found.torch) !== undefined, String(found.torch));
    let debugpy = true;
    try {
        execFileSync(PYTHON, ['-c', 'import debugpy'], { stdio: 'ignore' });
    } catch {
        debugpy = false;
    }
    assert.equal(found.debugpy, debugpy);
});

test('probe output is checked, not trusted', () => {
    assert.deepEqual(
        parseProbe('{"python": [3, 11, 7], "torch": "2.13.0+cpu", "executable": "/p", "debugpy": true}\n'),
        { python: [3, 11, 7], torch: '2.13.0+cpu', executable: '/p', debugpy: true },
    );
    // Only the last line counts: a sitecustomize may print before it.
    assert.equal(
        parseProbe('hello\n{"python": [3, 12, 0], "torch": null, "executable": "/p", "debugpy": false}').torch,
        null,
    );
    for (const bad of [
        '{"python": [3, 11], "torch": null, "executable": "/p", "debugpy": false}',
        '{"python": [3, 11, 0], "torch": 2, "executable": "/p", "debugpy": false}',
        '{"python": [3, 11, 0], "torch": null, "executable": "/p"}',
    ]) {
        assert.throws(() => parseProbe(bad), /unexpected probe output/, bad);
    }
    assert.throws(() => parseProbe('Traceback (most recent call last):'), SyntaxError);
});

test('torch versions, local builds and pre-releases included', () => {
    assert.deepEqual(releaseOf('2.13.0+cpu'), [2, 13]);
    assert.deepEqual(releaseOf('2.6.0a0+git1234abc'), [2, 6]);
    assert.deepEqual(releaseOf('10.0'), [10, 0]);
    assert.equal(releaseOf('unknown'), undefined);
    assert.ok(atLeast([2, 6], [2, 6]));
    assert.ok(atLeast([2, 13], [2, 6])); // not a string comparison
    assert.ok(atLeast([3, 0], [2, 6]));
    assert.ok(!atLeast([2, 5], [2, 6]));
    assert.ok(!atLeast([1, 13], [2, 6]));
});

test('a supported interpreter has no problem', () => {
    assert.equal(checkProbe(probe([3, 10, 0], '2.6.0')), undefined);
    assert.equal(checkProbe(probe([3, 13, 1], '2.13.0+cu128')), undefined);
});

test('no torch: install it, or choose another interpreter', () => {
    const problem = checkProbe(probe([3, 11, 7], null));
    assert.equal(problem?.reason, 'no torch in the interpreter');
    assert.match(problem?.message ?? '', /\/venv\/bin\/python has none: install torch>=2\.6/);
    assert.deepEqual(problem?.fixes, ['installTorch', 'chooseInterpreter']);
});

test('an old or unreadable torch is not supported', () => {
    const old = checkProbe(probe([3, 11, 7], '2.5.1'));
    assert.equal(old?.reason, 'torch 2.5.1 is not supported');
    assert.match(old?.message ?? '', /gbls needs torch>=2\.6; \/venv\/bin\/python has torch 2\.5\.1/);
    assert.deepEqual(old?.fixes, ['installTorch', 'chooseInterpreter']);
    assert.equal(checkProbe(probe([3, 11, 7], 'unknown'))?.reason, 'torch unknown is not supported');
});

test('an old Python cannot run the server, whatever its torch', () => {
    const problem = checkProbe(probe([3, 9, 18], '2.6.0'));
    assert.equal(problem?.reason, 'Python 3.9.18 is too old');
    assert.deepEqual(problem?.fixes, ['chooseInterpreter']);
});

test('no interpreter, or one that does not run', () => {
    assert.deepEqual(noInterpreter().fixes, ['chooseInterpreter']);
    const failed = probeFailed('/nowhere/python', 'spawn /nowhere/python ENOENT');
    assert.equal(failed.message, 'gbls cannot run the interpreter /nowhere/python: spawn /nowhere/python ENOENT');
});

test('a variable gbls cannot expand in gbls.interpreter is named', () => {
    const problem = unknownVariables('${workspaceFolder:c}/.venv/bin/python', ['${workspaceFolder:c}']);
    assert.equal(problem.reason, 'gbls.interpreter has an unknown variable');
    assert.match(
        problem.message,
        /^gbls.interpreter is \$\{workspaceFolder:c\}\/.venv\/bin\/python, and \$\{workspaceFolder:c\} has no value here/,
    );
    assert.deepEqual(problem.fixes, ['chooseInterpreter']);
});
