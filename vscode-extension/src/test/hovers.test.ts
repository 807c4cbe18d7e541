import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { routeHover } from '../hovers';

const MARKDOWN = [
    '**To do:** Print from the graph: torch.\\_higher\\_order\\_ops.print. **Failed to trace builtin operator**',
    '**Chain:** `preprocess` (line 19) → `normalize` (line 13) → `log_stats` (line 7): the cause',
    '**How `preprocess` splits**: graph 1 · 1 op (line 18) → **break at line 19**',
].join('\n\n');

test("a break's hover loses its chain where VS Code shows the diagnostic's related information", () => {
    const hover = { contents: [{ value: MARKDOWN }] };
    routeHover(hover, true);
    assert.equal(hover.contents[0].value.includes('**Chain:**'), false);
    assert.equal(hover.contents[0].value.split('\n\n').length, 2);
});

test('without related information the chain stays', () => {
    const hover = { contents: [{ value: MARKDOWN }] };
    routeHover(hover, false);
    assert.equal(hover.contents[0].value, MARKDOWN);
    assert.equal(routeHover(null, true), null);
});
