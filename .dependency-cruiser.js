// The module boundaries of src/, checked by `npm run lint` (dependency-cruiser; paths are relative to the
// repository root). src/layering.lint.spec.ts shows that each rule fires on an import that breaks it.

/** The modules that keep secrets (the vault): they know nothing of payments. */
const VAULT = '(tokens|sessions|applications|tenants)';
/** Entry points and the composition root: they may import anything, nothing imports them. */
const ENTRY_POINTS = '^src/(cli/|main[.]ts$|cli[.]ts$|app[.]module[.]ts$|app[.]setup[.]ts$)';
/** What only the module that owns it may import: its rows and the SQL that reads them. */
const MODULE_INTERNALS = '^src/modules/.*(/entities/|[.](repository|entity)[.]ts$)';
const TEST_CODE = '(^test/|[.](e2e-)?spec[.]ts$)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'common-knows-no-domain',
      comment: 'common/ is the toolbox of every module: it imports none of them.',
      severity: 'error',
      from: { path: '^src/common/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'database-imports-no-domain',
      comment: 'database/ opens the data source and runs migrations; modules bring their own rows.',
      severity: 'error',
      from: { path: '^src/database/' },
      to: { path: '^src/(modules|common)/' },
    },
    {
      name: 'config-imports-nothing',
      comment: 'The environment schema is read by everything and depends on nothing of the service.',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: '^src/', pathNot: '^src/config/' },
    },
    {
      name: 'nothing-imports-entry-points',
      comment: 'main.ts, cli.ts, cli/ and the app module assemble the service; no layer below imports them.',
      severity: 'error',
      from: { path: '^src/(common|database|config|modules)/' },
      to: { path: ENTRY_POINTS },
    },
    {
      name: 'vault-knows-no-payments',
      comment: 'Orchestration uses the vault, never the other way round.',
      severity: 'error',
      from: { path: `^src/modules/${VAULT}/` },
      to: { path: '^src/modules/orchestration/' },
    },
    {
      name: 'recorders-know-nothing-they-record',
      comment: 'logs and idempotency record what other modules do and import none of them.',
      severity: 'error',
      from: { path: '^src/modules/(logs|idempotency)/' },
      to: { path: '^src/modules/', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'module-internals-stay-inside',
      comment:
        'A module reaches another through its module, services and DTOs, not its entities or repositories.',
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: MODULE_INTERNALS, pathNot: '^src/modules/$1/' },
    },
    {
      name: 'module-internals-stay-inside-modules',
      comment: 'Nothing outside src/modules imports the entities or repositories of a module.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/modules/' },
      to: { path: MODULE_INTERNALS },
    },
    {
      name: 'repositories-are-given-their-change',
      comment:
        'A repository runs the SQL of the change it is given: it opens none (UnitOfWork) and calls no service.',
      severity: 'error',
      from: { path: '[.]repository[.]ts$' },
      to: {
        path: '(^src/common/unit-of-work/unit-of-work[.]ts$|[.](service|controller)[.]ts$)',
      },
    },
    {
      name: 'controllers-reach-no-repository',
      comment:
        'A controller hands the request to a service; the SQL is two layers down (a row type may pass).',
      severity: 'error',
      from: { path: '[.]controller[.]ts$' },
      to: { path: '[.]repository[.]ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-circular',
      comment: 'Files do not import each other in a cycle.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-between-modules',
      comment:
        'Modules (with their sub-folders), database/, config/ and cli/ do not import each other in a cycle. ' +
        "Sub-folders of one module may (tokens/ and tokens/dto/); so may common/'s folders among themselves.",
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/(modules/[^/]+|database|config|cli)(/|$)' },
      to: { circular: true, pathNot: '^src/$1(/|$)' },
    },
    {
      name: 'no-circular-between-orchestration-folders',
      comment:
        "Orchestration's folders (formulas, processors, connections, flows, buyers, transactions, approvals, " +
        'notifications) do not import each other in a cycle: each builds on the ones below it. Files of one ' +
        'folder and its sub-folders may.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/modules/orchestration/([^/]+)(/|$)' },
      to: {
        circular: true,
        // Nor the module's own folder (its module file wires every folder, its errors serve them all).
        pathNot: '^src/modules/orchestration/$1(/|$)|^src/modules/orchestration$',
      },
    },
    {
      name: 'no-test-code-in-src',
      comment: 'Production code does not import specs or the test support.',
      severity: 'error',
      from: { path: '^src/', pathNot: TEST_CODE },
      to: { path: TEST_CODE },
    },
    {
      name: 'not-to-dev-dependency',
      comment: 'Production code runs without devDependencies (type-only imports vanish at compile time).',
      severity: 'error',
      from: { path: '^src/', pathNot: TEST_CODE },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-non-package-json',
      comment:
        'Every package imported is declared in package.json, not only installed as a dependency of another.',
      severity: 'error',
      from: {},
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves to a file or a package.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-orphans',
      comment: 'A file nothing imports and that imports nothing is dead code.',
      severity: 'error',
      from: { orphan: true, pathNot: '[.]d[.]ts$' },
      to: {},
    },
  ],
  options: {
    // The test support is reached from specs beside the code and is not followed: it uses the modules it
    // tests, which is no cycle of production code (no-test-code-in-src still sees every import of it).
    doNotFollow: { path: ['node_modules', '^test/'] },
    tsConfig: { fileName: 'tsconfig.json' },
    // Type-only imports count too: a boundary is crossed as much by a type as by a value.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['require', 'node', 'default', 'types'],
    },
    reporterOptions: {
      // `--output-type archi`: one node per module (and per folder of database/, config/, common/, cli/).
      archi: {
        collapsePattern: '^(src/modules/[^/]+|src/common/[^/]+|src/[^/]+)/|^node_modules/(@[^/]+/)?[^/]+',
      },
    },
  },
};
