// ESLint for the extension's TypeScript, with typescript-eslint's type-checked rules: `npm run lint`
// (with tsc and prettier). Formatting is prettier's, not ESLint's.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
    { ignores: ['out/', 'dist/', 'bundled/', '.e2e/', 'node_modules/'] },
    js.configs.recommended,
    {
        files: ['src/**/*.ts'],
        extends: [tseslint.configs.recommendedTypeChecked],
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
        },
        rules: {
            curly: 'error',
            eqeqeq: 'error',
            '@typescript-eslint/only-throw-error': 'error',
            '@typescript-eslint/switch-exhaustiveness-check': 'error',
            '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
            // node:test's test() returns a promise that the runner awaits.
            '@typescript-eslint/no-floating-promises': [
                'error',
                { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: 'test' }] },
            ],
        },
    },
);
