// The extension's package.json, typed as far as the tests read it.
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface Property {
    type: string;
    default: unknown;
    enum?: unknown[];
    scope?: string;
}

export interface Manifest {
    main: string;
    activationEvents: string[];
    scripts: Record<string, string>;
    capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
    contributes: {
        commands: { command: string; title: string; category: string }[];
        configuration: { properties: Record<string, Property> };
    };
}

export const ROOT = path.resolve(__dirname, '..', '..');
export const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
