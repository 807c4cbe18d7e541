// The server's code lenses carry its own command, gbls.showReport, which returns the break report
// as markdown and shows nothing. A click must show it, so lenses are rerouted to the client's
// gbls.showBreakReport with the same arguments ([uri, qualname]). No vscode import: unit-tested.

export const SERVER_SHOW_REPORT = 'gbls.showReport';
export const CLIENT_SHOW_REPORT = 'gbls.showBreakReport';

export interface Lens {
    command?: { command: string };
}

export function routeLenses<L extends Lens>(lenses: L[] | null | undefined): L[] | null | undefined {
    for (const lens of lenses ?? []) {
        if (lens.command?.command === SERVER_SHOW_REPORT) {
            lens.command.command = CLIENT_SHOW_REPORT;
        }
    }
    return lenses;
}
