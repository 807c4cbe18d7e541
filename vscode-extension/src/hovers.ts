// VS Code shows a diagnostic's related information in the hover, above the server's markdown: for a
// graph break, its chain, each step a link. The markdown's own "**Chain:**" paragraph says it again
// and makes the hover taller than VS Code's box, so it goes where the diagnostic under the pointer
// has related information. Other clients (Neovim's hover shows no related information) keep it.
// No vscode import: unit-tested.

const CHAIN = '**Chain:**';

export interface Markdown {
    value: string;
}

// The markdown without its chain paragraph.
export function withoutChain(markdown: string): string {
    return markdown
        .split('\n\n')
        .filter((paragraph) => !paragraph.startsWith(CHAIN))
        .join('\n\n');
}

// Each markdown content of a hover without its chain, where `related`: the position has a
// diagnostic with related information.
export function routeHover<H extends { contents: unknown[] }>(
    hover: H | null | undefined,
    related: boolean,
): H | null | undefined {
    if (hover && related) {
        for (const content of hover.contents) {
            const markdown = content as Partial<Markdown>;
            if (typeof markdown.value === 'string') {
                markdown.value = withoutChain(markdown.value);
            }
        }
    }
    return hover;
}
