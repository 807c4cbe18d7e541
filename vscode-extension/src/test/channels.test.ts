import * as fake from './fake-vscode';
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { clock, LabelledLog, TRACE_CHANNEL, TraceChannel, TraceSetting, traceSetting } from '../channels';

test("a folder's client writes to the shared log with the folder's name", () => {
    const log = new fake.FakeLogOutputChannel('gbls');
    const b = new LabelledLog(log, 'b');
    b.info('Interpreter (from gbls.interpreter): /b/venv/bin/python');
    b.error('Traceback (most recent call last):');
    b.appendLine('line');
    b.append('raw');
    new LabelledLog(log, undefined).warn('one folder: no name');
    assert.deepEqual(log.lines, [
        'info [b] Interpreter (from gbls.interpreter): /b/venv/bin/python',
        'error [b] Traceback (most recent call last):',
        '[b] line',
        'raw',
        'warning one folder: no name',
    ]);
    log.logLevel = fake.LogLevel.Trace;
    assert.equal(b.logLevel, fake.LogLevel.Trace, "the log's own level");
    b.dispose();
    b.info('still there');
    assert.equal(log.lines.at(-1), 'info [b] still there', 'the shared log outlives a client');
});

test('the trace channel: its level is gbls.trace.server, its lines only while on', () => {
    let setting: TraceSetting = 'off';
    const sink = new fake.FakeOutputChannel(TRACE_CHANNEL);
    const trace = new TraceChannel(
        () => sink,
        'a',
        () => setting,
    );
    const levels: fake.LogLevel[] = [];
    trace.onDidChangeLogLevel((level) => levels.push(level));
    assert.equal(trace.name, TRACE_CHANNEL);
    assert.equal(trace.logLevel, fake.LogLevel.Off);
    trace.trace("Sending request 'initialize - (0)'.");
    assert.deepEqual(sink.lines, []);
    for (const next of ['messages', 'verbose', 'off'] as const) {
        setting = next;
        trace.refresh();
    }
    assert.deepEqual(levels, [fake.LogLevel.Trace, fake.LogLevel.Trace, fake.LogLevel.Off]);
    setting = 'verbose';
    trace.trace("Sending request 'initialize - (0)'.");
    assert.equal(sink.lines.length, 1);
    assert.match(sink.lines[0], /^\d\d:\d\d:\d\d\.\d\d\d \[a\] Sending request 'initialize - \(0\)'\.$/);
    trace.dispose();
    trace.refresh();
    assert.equal(levels.length, 3, 'disposed: no more events');
});

test('gbls.trace.server: anything but messages or verbose is off', () => {
    const of = (value: unknown) => traceSetting({ get: <T>() => value as T });
    assert.equal(of('messages'), 'messages');
    assert.equal(of('verbose'), 'verbose');
    assert.equal(of('off'), 'off');
    assert.equal(of(undefined), 'off');
    assert.equal(of({ verbosity: 'verbose' }), 'off');
});

test('trace lines carry the local time', () => {
    assert.equal(clock(new Date(2026, 0, 2, 3, 4, 5, 6)), '03:04:05.006');
    assert.equal(clock(new Date(2026, 0, 2, 23, 59, 59, 999)), '23:59:59.999');
});
