import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

/**
 * The layers (docs: DESIGN.md, architecture.json): what each top-level folder may import from the others. Imports
 * point down only; siblings import each other only along the architecture's arrows (activities → agents, bus), and
 * the two SDKs are narrower than their layer: `http-client/` is fetch-only (protocol/ alone) and `gateway/` lists
 * agents from the bus summaries instead of loading them. `test/` and `bench/` may import anything.
 */
const layers = {
  protocol: [],
  // Plus `activities` as types only: see the sandbox block below.
  workflows: ['protocol'],
  // Metrics and logs (Node-only): what activities, the gateway and the worker record, never the workflow.
  observability: ['protocol'],
  activities: ['protocol', 'workflows', 'agents', 'bus', 'observability'],
  agents: ['protocol', 'workflows'],
  bus: ['protocol', 'workflows'],
  config: ['protocol', 'workflows', 'observability'],
  client: ['protocol', 'workflows', 'activities', 'agents', 'bus', 'config'],
  'http-client': ['protocol'],
  // The web console runs in the browser: it talks to the gateway through the fetch-only SDK, like any web app.
  console: ['protocol', 'http-client'],
  gateway: ['protocol', 'client', 'config', 'observability'],
  worker: [
    'protocol',
    'workflows',
    'activities',
    'agents',
    'bus',
    'config',
    'client',
    'http-client',
    'gateway',
    'observability',
  ],
};

/** Pairs that must never be imported, with the reason a reader gets (architecture.json "never"). */
const never = {
  'protocol→workflows': 'the bottom layer knows nothing above it',
  'protocol→client': 'the bottom layer knows nothing above it',
  'protocol→activities': 'the bottom layer knows nothing above it',
  'workflows→client': 'deterministic code never depends on a caller',
  'workflows→gateway': 'deterministic code never depends on a caller',
  'workflows→bus': 'the workflow never does I/O',
  'workflows→worker': 'deterministic code never depends on its host',
  'http-client→client': 'the browser SDK carries no Temporal client',
  'http-client→workflows': 'the browser SDK carries no workflow code',
  'console→client': 'the console is a browser app: it talks to the gateway over HTTP',
  'console→gateway': 'the console is a browser app: it talks to the gateway over HTTP',
  'gateway→agents': 'the gateway lists agents, it does not load them',
  'gateway→activities': 'the gateway never runs a step',
};

const parts = Object.keys(layers);

const layerZones = parts.flatMap((part) =>
  parts
    .filter((other) => other !== part && !layers[part].includes(other))
    // Workflows may import activities as types (the proxy's signature); values are refused by no-restricted-imports.
    .filter((other) => !(part === 'workflows' && other === 'activities'))
    .map((other) => ({
      target: `./${part}`,
      from: `./${other}`,
      message:
        `Layering: ${part}/ must not import ${other}/ (${never[`${part}→${other}`] ?? 'imports point down only'}). ` +
        `${part}/ may import ${layers[part].length ? layers[part].map((p) => `${p}/`).join(', ') : 'no other project folder'}.`,
    })),
);

/** Packages that need Node (sockets, files, native code): never in the workflow sandbox or a browser bundle. */
const nodeOnlyPackages = [
  '@temporalio/activity',
  '@temporalio/client',
  '@temporalio/envconfig',
  '@temporalio/testing',
  '@temporalio/worker',
  'ioredis',
  'hono',
  'tsx',
];

/** `no-restricted-imports` options for code that must run without Node: the workflow sandbox or a browser. */
function withoutNode(where, extraPatterns = []) {
  const builtinMessage = `${where}: no Node built-ins.`;
  const packageMessage = `${where}: no Node-only packages.`;
  return [
    'error',
    {
      paths: [
        ...builtinModules.filter((m) => !m.startsWith('_')).map((name) => ({ name, message: builtinMessage })),
        ...nodeOnlyPackages.map((name) => ({ name, message: packageMessage })),
      ],
      patterns: [
        { regex: '^node:', message: builtinMessage },
        { regex: '^(hono|@hono|@temporalio/(client|worker|activity|testing|envconfig))/', message: packageMessage },
        ...extraPatterns,
      ],
    },
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'test/replay/histories/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    settings: {
      // Without a resolver that knows `.ts`, import-x resolves no project import and the rules below check nothing.
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json', '.node'] }),
      ],
      // …and without `.ts` here it parses no project module, so no-cycle sees no dependency.
      'import-x/extensions': ['.ts', '.tsx', '.js', '.mjs', '.cjs'],
      'import-x/external-module-folders': ['node_modules'],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: layerZones }],
    },
  },
  {
    // Shared by the workflow sandbox, the worker, the gateway and browser clients.
    files: ['protocol/**/*.ts'],
    rules: { 'no-restricted-imports': withoutNode('protocol/ is imported by workflow code and browsers') },
  },
  {
    files: ['http-client/**/*.ts'],
    rules: { 'no-restricted-imports': withoutNode('http-client/ is the fetch-only SDK for browsers') },
  },
  {
    files: ['console/**/*.ts', 'console/**/*.tsx'],
    rules: { 'no-restricted-imports': withoutNode('console/ is bundled for the browser (gateway/console.ts)') },
  },
  {
    // The workflow sandbox is deterministic: no Node built-ins, no wall clock, no randomness.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': withoutNode('Workflow code runs in the deterministic sandbox; do I/O in activities/', [
        {
          regex: '^(\\.\\./)+activities(/.*)?$',
          allowTypeImports: true,
          message: 'Import activities as types only.',
        },
      ]),
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'Use uuid4() or state from the caller.' },
        { object: 'Date', property: 'now', message: 'Decide with workflow time, not the wall clock in handlers.' },
        { object: 'crypto', property: 'randomUUID', message: 'Use uuid4() from @temporalio/workflow.' },
      ],
    },
  },
);
