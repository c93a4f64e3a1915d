import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { Column, DataSource, Entity, EntityManager, getMetadataArgsStorage, PrimaryColumn } from 'typeorm';
import { Change, Origin } from './common/unit-of-work/change';
import { PieceBuilder, PieceOptions, WriteBatch } from './common/unit-of-work/write-batch';
import type { EntityClass } from './database/data-source';
import { GenerateSql, generatedSql, GenerateSqlOptions } from './database/generate-sql';

/**
 * The SQL of every repository method marked with `@GenerateSql`, rendered into test/sql/<file>.sql (one
 * file per repository file) and compared with the committed files, so that a review shows each change to
 * the statements the service sends. No database: each repository gets a recording connection, which
 * keeps the text of every statement sent and answers no rows (or what the method's `answers` give).
 *
 * `UPDATE_SQL=true` rewrites the files (and removes those no repository renders any more).
 */

const ROOT = join(__dirname, '..');
const SQL_DIR = join(ROOT, 'test', 'sql');
const UPDATE = process.env.UPDATE_SQL === 'true';

/** The files under src/ that `wanted` accepts, in a stable order. */
async function sourceFiles(wanted: (path: string) => boolean, dir = join(ROOT, 'src')): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(wanted, path)));
    else if (wanted(path)) files.push(path);
  }
  return files.sort();
}

/** Every `*.repository.ts` under src/. */
const repositoryFiles = () => sourceFiles((path) => path.endsWith('.repository.ts'));

/** What a statement gets: rows, or rows and a count (of an UPDATE or DELETE without RETURNING). */
type Answer = unknown[] | { rows?: unknown[]; rowCount?: number };

/** Statements TypeORM adds around a unit of work of its own (`save`, `transaction`): left out. */
const TRANSACTION_CONTROL =
  /^\s*(START TRANSACTION|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE SAVEPOINT|SET TRANSACTION)\b/i;

/** The statements one call sent, in order, and what the connection answers them. */
class Recorder {
  readonly statements: string[] = [];
  private answered = 0;

  constructor(private readonly answers: Answer[] = []) {}

  /** Keeps the statement; answers as pg does: the next of `answers`, else no rows. */
  query(sql: unknown): { command: string; rows: unknown[]; rowCount: number } {
    // pg also takes a query object: `{ name, text, values }`.
    const text = typeof sql === 'string' ? sql : (sql as { text?: unknown } | undefined)?.text;
    if (typeof text !== 'string') throw new Error(`a query without SQL text: ${String(sql)}`);
    const command = /^\s*\(?\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? '';
    if (TRANSACTION_CONTROL.test(text)) return { command, rows: [], rowCount: 0 };
    this.statements.push(text);
    const answer = this.answered < this.answers.length ? this.answers[this.answered++] : [];
    const rows = Array.isArray(answer) ? answer : (answer.rows ?? []);
    return {
      command,
      rows,
      rowCount: Array.isArray(answer) ? rows.length : (answer.rowCount ?? rows.length),
    };
  }
}

/** The recorder of the call being rendered. */
let recorder = new Recorder();

/** The one pg connection of the recording data source: it records and answers, and sends nothing. */
const client = {
  query: (sql: unknown) => Promise.resolve(recorder.query(sql)),
  on: () => client,
  removeListener: () => client,
};

/**
 * A TypeORM data source over the recording connection, never connected: with the metadata of every
 * entity, so that entity repositories build their SQL as they would against the database, and every
 * statement goes to `client`. Answers are what TypeORM makes of pg's (rows; rows and count for an
 * UPDATE or DELETE).
 */
async function recordingDataSource(): Promise<DataSource> {
  for (const file of await sourceFiles((path) => /([.]entity[.]ts|\/entities\/[^/]+[.]ts)$/.test(path)))
    await import(file);
  const entities = getMetadataArgsStorage().tables.map((table) => table.target);
  const dataSource = new DataSource({ type: 'postgres', entities: entities as EntityClass[] });
  await (dataSource as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  const driver = dataSource.driver as unknown as {
    obtainMasterConnection(): Promise<[unknown, () => void]>;
    version: string;
  };
  driver.version = '16.0';
  driver.obtainMasterConnection = () => Promise.resolve([client, () => undefined]);
  return dataSource;
}

let dataSource: DataSource;

/**
 * What a repository gets for every parameter of its constructor: the recording data source, which also
 * stands for a transaction's manager (`tx`) and for a pg client (`query`).
 */
function recordingConnection(): DataSource & { tx: EntityManager } {
  return Object.assign(Object.create(dataSource) as DataSource, {
    tx: dataSource.createQueryRunner().manager,
  });
}

/** The origin of the recorded changes: a fixed application of a fixed tenant. */
const ORIGIN: Origin = {
  actor: {
    tenantId: '00000000-0000-4000-8000-0000000000a1',
    applicationId: '00000000-0000-4000-8000-0000000000b1',
  },
};

/**
 * A change in a transaction over the recording connection. Its `write`s are rendered one by one, as
 * `WriteBatch` sends a piece by itself (in a one-statement change the pieces of a request are joined
 * into one statement the same way).
 */
class RecordingChange extends Change {
  constructor() {
    const manager = dataSource.createQueryRunner().manager;
    super(ORIGIN, 'transaction', manager, (sql, params) => manager.query(sql, params));
  }

  override async write(build: PieceBuilder, options: PieceOptions = {}): Promise<void> {
    const batch = new WriteBatch();
    batch.add(build, options);
    await batch.run(async (sql) => {
      const { rows } = recorder.query(sql);
      return rows.length ? rows : [{}];
    });
  }
}

/** Clauses a long statement of one line (as TypeORM builds them) is broken before. */
const CLAUSES =
  / +(?=(?:FROM|WHERE|GROUP BY|ORDER BY|LIMIT|OFFSET|VALUES|RETURNING|ON CONFLICT|SET|(?:INNER |LEFT )?JOIN) )/;

/**
 * One statement as it appears in a snapshot: its first line as written, the lines after it moved left
 * together (as far as the least indented goes) and indented by two, no blank lines, no trailing spaces.
 * A statement of one line longer than 100 characters is broken before its clauses.
 */
function formatStatement(sql: string): string {
  let lines = sql
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '');
  if (!lines.length) return ';';
  if (lines.length === 1 && lines[0].trim().length > 100) lines = lines[0].trim().split(CLAUSES);
  const [first, ...rest] = lines;
  const indent = Math.min(...rest.map((line) => line.length - line.trimStart().length));
  return [first.trim(), ...rest.map((line) => `  ${line.slice(indent)}`)].join('\n') + ';';
}

/** An entity of the entity repository test (registered with TypeORM's metadata on import, as any). */
@Entity('sql_probes')
class SqlProbeEntity {
  @PrimaryColumn()
  id: string;

  @Column()
  name: string;
}

type RepositoryClass = (new (...args: unknown[]) => Record<string, unknown>) & { name: string };

/** The snapshot of the marked methods of the classes of one repository file (empty when none is marked). */
async function render(file: string): Promise<string> {
  const module = (await import(file)) as Record<string, unknown>;
  return renderClasses(
    Object.values(module).filter(
      (value): value is RepositoryClass => typeof value === 'function' && generatedSql(value).length > 0,
    ),
  );
}

async function renderClasses(classes: RepositoryClass[]): Promise<string> {
  const entries: string[] = [];
  const failures: string[] = [];
  for (const Class of classes) {
    const types = (Reflect.getMetadata('design:paramtypes', Class) as unknown[] | undefined) ?? [];
    for (const { method, queries } of generatedSql(Class)) {
      for (const options of queries) {
        try {
          entries.push(...(await call(Class, types.length, method, options)));
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    }
  }
  // Every method that cannot be rendered, at once.
  if (failures.length) throw new Error(failures.join('\n'));
  return entries.length ? `${entries.join('\n\n')}\n` : '';
}

/** Calls one marked method with its example arguments; answers its statements, each under its heading. */
async function call(
  Class: RepositoryClass,
  parameters: number,
  method: string,
  options: GenerateSqlOptions,
): Promise<string[]> {
  recorder = new Recorder(options.answers as Answer[] | undefined);
  const connection = recordingConnection();
  const repository = new Class(
    ...Array.from({ length: Math.max(parameters, Class.length) }, () => connection),
  );
  const args = options.change ? [new RecordingChange(), ...options.params] : options.params;
  const heading = `-- ${Class.name}.${method}${options.name ? ` (${options.name})` : ''}`;
  try {
    await (repository[method] as (...a: unknown[]) => Promise<unknown>)(...args);
  } catch (error) {
    throw new Error(
      `${heading.slice(3)} failed on the recording connection (give it rows with \`answers\`): ${String(error)}`,
      { cause: error },
    );
  }
  if (!recorder.statements.length) throw new Error(`${heading.slice(3)} sent no SQL`);
  return recorder.statements.map((sql) => `${heading}\n${formatStatement(sql)}`);
}

describe('SQL snapshots (test/sql/*.sql; UPDATE_SQL=true rewrites them)', () => {
  let files: string[] = [];

  beforeAll(async () => {
    files = await repositoryFiles();
    dataSource = await recordingDataSource();
    if (UPDATE) await mkdir(SQL_DIR, { recursive: true });
  });

  it('names one snapshot per repository file', async () => {
    const names = (await repositoryFiles()).map((file) => basename(file, '.ts'));
    expect(new Set(names).size).toBe(names.length);
  });

  it('renders the marked methods of every repository as committed', async () => {
    const rendered = new Map<string, string>();
    const failures: string[] = [];
    for (const file of files) {
      const text = await render(file).catch((error: Error) => void failures.push(error.message));
      if (text) rendered.set(`${basename(file, '.ts')}.sql`, text);
    }
    if (failures.length) throw new Error(failures.join('\n'));
    const committed = existsSync(SQL_DIR) ? (await readdir(SQL_DIR)).filter((f) => f.endsWith('.sql')) : [];

    if (UPDATE) {
      for (const [name, text] of rendered) await writeFile(join(SQL_DIR, name), text);
      for (const name of committed.filter((n) => !rendered.has(n))) await rm(join(SQL_DIR, name));
      return;
    }
    // A file no repository renders any more, or one never committed.
    expect(committed.sort()).toEqual([...rendered.keys()].sort());
    for (const [name, text] of rendered) {
      const path = join(SQL_DIR, name);
      const expected = await readFile(path, 'utf8');
      // Jest shows the difference; `npm run sql` (UPDATE_SQL=true) rewrites the file.
      expect({ file: relative(ROOT, path), sql: text }).toEqual({
        file: relative(ROOT, path),
        sql: expected,
      });
    }
  });

  it('renders a piece written through change.write as WriteBatch sends it, and answers as TypeORM does', async () => {
    class ProbeRepository {
      constructor(private readonly db: { query(sql: string, params: unknown[]): Promise<unknown> }) {}

      @GenerateSql({ change: true, params: ['t1', 'probe'] })
      async record(change: Change, tenantId: string, name: string): Promise<void> {
        await change.write(({ p, name: cte }) => ({
          ctes: [
            `${cte('probe')} AS (INSERT INTO probes (tenant_id, name) VALUES (${p.add(tenantId)}, ${p.add(name)}))`,
          ],
        }));
      }

      @GenerateSql(
        { name: 'count of an UPDATE', params: [] },
        { name: 'answered', params: [], answers: [{ rowCount: 3 }] },
      )
      async touch(): Promise<number> {
        const [, count] = (await this.db.query('UPDATE probes SET seen = true', [])) as [unknown[], number];
        if (typeof count !== 'number') throw new Error('no count');
        return count;
      }
    }
    expect(await renderClasses([ProbeRepository as unknown as RepositoryClass])).toBe(
      [
        '-- ProbeRepository.record',
        'WITH probe_0 AS (INSERT INTO probes (tenant_id, name) VALUES ($1, $2))',
        '  SELECT NULL AS r0;',
        '',
        '-- ProbeRepository.touch (count of an UPDATE)',
        'UPDATE probes SET seen = true;',
        '',
        '-- ProbeRepository.touch (answered)',
        'UPDATE probes SET seen = true;',
        '',
      ].join('\n'),
    );
  });

  it('renders what TypeORM builds for an entity repository', async () => {
    class ProbeRepository {
      constructor(private readonly db: { tx: EntityManager }) {}

      @GenerateSql({ params: ['p1'] })
      find(id: string): Promise<SqlProbeEntity | null> {
        return this.db.tx.getRepository(SqlProbeEntity).findOneBy({ id });
      }

      // A full page: TypeORM counts the rows only when the page does not tell it.
      @GenerateSql({
        params: [],
        answers: [
          [
            { SqlProbeEntity_id: 'p1', SqlProbeEntity_name: 'one' },
            { SqlProbeEntity_id: 'p2', SqlProbeEntity_name: 'two' },
          ],
        ],
      })
      page(): Promise<[SqlProbeEntity[], number]> {
        return this.db.tx.getRepository(SqlProbeEntity).findAndCount({ order: { id: 'ASC' }, take: 2 });
      }
    }
    expect(await renderClasses([ProbeRepository as unknown as RepositoryClass])).toBe(
      [
        '-- ProbeRepository.find',
        'SELECT "SqlProbeEntity"."id" AS "SqlProbeEntity_id", "SqlProbeEntity"."name" AS "SqlProbeEntity_name"',
        '  FROM "sql_probes" "SqlProbeEntity"',
        '  WHERE (("SqlProbeEntity"."id" = $1))',
        '  LIMIT 1;',
        '',
        '-- ProbeRepository.page',
        'SELECT "SqlProbeEntity"."id" AS "SqlProbeEntity_id", "SqlProbeEntity"."name" AS "SqlProbeEntity_name"',
        '  FROM "sql_probes" "SqlProbeEntity"',
        '  ORDER BY "SqlProbeEntity"."id" ASC',
        '  LIMIT 2;',
        '',
        '-- ProbeRepository.page',
        'SELECT COUNT(1) AS "cnt" FROM "sql_probes" "SqlProbeEntity";',
        '',
      ].join('\n'),
    );
  });

  it('lays statements out the same whatever their indentation in the source', () => {
    expect(formatStatement('SELECT a\n         FROM t\n           WHERE x\n')).toBe(
      'SELECT a\n  FROM t\n    WHERE x;',
    );
    expect(formatStatement('\n    DELETE FROM t WHERE a < $1   \n')).toBe('DELETE FROM t WHERE a < $1;');
  });
});
