import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * SQL stays in repositories: `npm run lint`'s ESLint (eslint.config.mjs with
 * eslint-rules/no-sql-outside-repositories.js) fails on SQL written anywhere else. In repositories it is
 * written one way (eslint-rules/one-sql-style.js): never through TypeORM's repository API or
 * QueryBuilder, and every public method has its SQL snapshot (`@GenerateSql`). Probe files are written
 * into a copy of the project in a temporary directory, never into src/ itself, and linted with the real
 * configuration, type information included.
 */

const ROOT = join(__dirname, '..');
const ESLINT = join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');
const RULE = 'vault/no-sql-outside-repositories';

interface LintResult {
  filePath: string;
  messages: { ruleId: string | null; line: number; message: string }[];
}

/** ESLint's JSON report of `files`, run in `cwd` as `npm run lint` runs it. */
function eslint(cwd: string, files: string[]): Promise<LintResult[]> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [ESLINT, '--format', 'json', ...files],
      { cwd, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        // ESLint exits with 1 when it reports errors; anything else that fails is the test's failure.
        if (error && error.code !== 1) return reject(new Error(`${error.message}\n${stderr}`));
        resolve(JSON.parse(stdout) as LintResult[]);
      },
    );
  });
}

let dir: string;

/** A copy of what linting needs (src/, the configuration and its rules) plus the probe files. */
async function copyWith(files: Record<string, string>): Promise<string> {
  const copy = await mkdtemp(join(tmpdir(), 'sql-placement-'));
  await cp(join(ROOT, 'src'), join(copy, 'src'), { recursive: true });
  await cp(join(ROOT, 'eslint-rules'), join(copy, 'eslint-rules'), { recursive: true });
  for (const file of ['eslint.config.mjs', 'package.json', 'tsconfig.json'])
    await cp(join(ROOT, file), join(copy, file));
  await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(copy, path)), { recursive: true });
    await writeFile(join(copy, path), text);
  }
  return copy;
}

const QUERY = `import { DataSource } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';

export class Probe {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({ params: [] })
  async count(): Promise<unknown> {
    return this.dataSource.query('SELECT count(*) FROM tokens WHERE tenant_id = $1', ['t']);
  }
}
`;

const PROBES = {
  // The same statement and call: reported in a service, allowed in a repository.
  'src/modules/health/probe.service.ts': QUERY,
  'src/modules/health/probe.repository.ts': QUERY,
  // A fragment that some repository would run: SQL all the same.
  'src/common/probe-fragment.ts':
    'export const counted = (cte: string): string => `(SELECT count(*)::int FROM ${cte})`;\n',
  'src/cli/probe-ddl.ts': "export const ddl = 'ALTER TABLE tokens ADD COLUMN probe int';\n",
  // Prose about SQL and a `query` method that takes no SQL are not SQL.
  'src/modules/health/probe-prose.ts':
    "export const hint = 'DELETE /tokens/{id} removes a token; select one from the list first';\n" +
    'export const size = (sizes: { query(pairs: [string, string][]): number }): number => sizes.query([]);\n',
  // Where SQL is allowed besides repositories.
  'src/database/migrations/probe-migration.ts': "export const up = 'CREATE INDEX probe ON tokens (id)';\n",
  'test/probe.ts': "export const seed = 'INSERT INTO tokens (id) VALUES ($1)';\n",
};

/** A repository that writes SQL the ways the one style leaves out, and a method with no snapshot. */
const STYLE_PROBES = {
  'src/modules/health/probe-style.repository.ts': `import { DataSource, IsNull } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';
import { TenantEntity } from '../tenants/tenant.entity';

export const unnamed = IsNull();

export class ProbeStyleRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({ params: ['t1'] })
  find(id: string): Promise<TenantEntity | null> {
    return this.dataSource.getRepository(TenantEntity).findOneBy({ id });
  }

  @GenerateSql({ params: [] })
  count(): Promise<number> {
    return this.dataSource.manager.count(TenantEntity);
  }

  @GenerateSql({ params: [] })
  page(): Promise<TenantEntity[]> {
    return this.dataSource.createQueryBuilder(TenantEntity, 't').getMany();
  }

  @GenerateSql({ params: [] })
  raw(): Promise<unknown> {
    return this.dataSource.query('SELECT 1');
  }

  unmarked(): Promise<unknown> {
    return this.dataSource.query('SELECT 2');
  }

  private helper(): Promise<unknown> {
    return this.dataSource.query('SELECT 3');
  }
}
`,
};

/** `file:line rule: message` of every message ESLint reports on `files` in the copy. */
async function reported(files: string[]): Promise<string[]> {
  const results = await eslint(dir, files);
  return results
    .flatMap((r) =>
      r.messages.map((m) => `${r.filePath.slice(dir.length + 1)}:${m.line} ${m.ruleId ?? ''}: ${m.message}`),
    )
    .sort();
}

describe('SQL only in repositories, written one way (ESLint, run by npm run lint)', () => {
  /** Every report on both sets of probes: one ESLint run (with type information, the slow part). */
  let reports: string[] = [];
  const of = (probes: Record<string, string>) =>
    reports.filter((report) => Object.keys(probes).some((file) => report.startsWith(`${file}:`)));

  beforeAll(async () => {
    dir = await copyWith({ ...PROBES, ...STYLE_PROBES });
    reports = await reported([...Object.keys(PROBES), ...Object.keys(STYLE_PROBES)]);
  }, 180_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('reports SQL written outside a repository, and nothing else, with the real configuration', () => {
    expect(of(PROBES)).toEqual([
      `src/cli/probe-ddl.ts:1 ${RULE}: SQL (ALTER) outside a repository: move it into a *.repository.ts file.`,
      `src/common/probe-fragment.ts:1 ${RULE}: SQL (SELECT ... FROM) outside a repository: move it into a *.repository.ts file.`,
      `src/modules/health/probe.service.ts:9 ${RULE}: A \`.query(\` call outside a repository: move it into a *.repository.ts file.`,
      `src/modules/health/probe.service.ts:9 ${RULE}: SQL (SELECT ... FROM) outside a repository: move it into a *.repository.ts file.`,
    ]);
  });

  it("reports TypeORM's repository API, its QueryBuilder and a method without @GenerateSql in a repository", () => {
    const file = 'src/modules/health/probe-style.repository.ts';
    const style =
      'write the statement as SQL text with the builder of src/database/table.ts (select, queryRows, insertEntity, assignmentsOf), not TypeORM.';
    expect(of(STYLE_PROBES)).toEqual([
      `${file}:1 no-restricted-imports: 'IsNull' import from 'typeorm' is restricted because only 'DataSource' and 'QueryRunner' are allowed. A repository takes the connection from TypeORM, nothing else: ${style}`,
      `${file}:12 no-restricted-syntax: TypeORM's repository API or QueryBuilder in a repository: ${style}`,
      `${file}:17 no-restricted-syntax: An entity manager in a repository (its methods are TypeORM's repository API; a change or the pool runs SQL): ${style}`,
      `${file}:22 no-restricted-syntax: TypeORM's repository API or QueryBuilder in a repository: ${style}`,
      `${file}:30 vault/generate-sql-on-every-repository-method: Repository method \`unmarked\` has no @GenerateSql: give it example arguments, so that its SQL is in test/sql/ (npm run sql).`,
    ]);
  });
});
