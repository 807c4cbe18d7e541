import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLIENT_SHOW_REPORT, routeLenses, SERVER_SHOW_REPORT } from '../lenses';

test("the server's report lenses open the client's report", () => {
    const lenses = [
        {
            command: {
                command: SERVER_SHOW_REPORT,
                title: 'gbls: 2 graphs · 1 break · 5 ops',
                arguments: ['file:///m.py', 'f'],
            },
        },
        { command: { command: 'gbls.other', title: 'other' } },
        {},
    ];
    routeLenses(lenses);
    assert.deepEqual(lenses[0], {
        command: {
            command: CLIENT_SHOW_REPORT,
            title: 'gbls: 2 graphs · 1 break · 5 ops',
            arguments: ['file:///m.py', 'f'],
        },
    });
    assert.equal(lenses[1].command?.command, 'gbls.other');
    assert.deepEqual(lenses[2], {});
});

test('no lenses', () => {
    assert.equal(routeLenses(null), null);
    assert.equal(routeLenses(undefined), undefined);
});
