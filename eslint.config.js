import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const nodeBuiltins = [
  'fs',
  'path',
  'crypto',
  'http',
  'https',
  'net',
  'os',
  'child_process',
  'worker_threads',
  'stream',
  'events',
  'url',
  'util',
  'dns',
  'tls',
  'zlib',
  'readline',
  'process',
  'timers',
];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'test/replay/histories/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
    },
  },
  {
    // The workflow sandbox is deterministic: no Node built-ins, no wall clock, no randomness.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins
            .flatMap((m) => [m, `node:${m}`])
            .map((name) => ({
              name,
              message: 'Workflow code runs in the deterministic sandbox: no Node built-ins. Do I/O in activities/.',
            })),
          patterns: [
            {
              group: ['../activities/*', '../worker/*'],
              allowTypeImports: true,
              message: 'Import activities as types only.',
            },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'Use uuid4() or state from the caller.' },
        { object: 'Date', property: 'now', message: 'Decide with workflow time, not the wall clock in handlers.' },
        { object: 'crypto', property: 'randomUUID', message: 'Use uuid4() from @temporalio/workflow.' },
      ],
    },
  },
);
