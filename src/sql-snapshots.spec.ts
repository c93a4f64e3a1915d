import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { EntityManager } from 'typeorm';
import { Change, Origin } from './common/unit-of-work/change';
import { PieceBuilder, PieceOptions, WriteBatch } from './common/unit-of-work/write-batch';
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

/** Every `*.repository.ts` under src/, in a stable order. */
async function repositoryFiles(dir = join(ROOT, 'src')): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await repositoryFiles(path)));
    else if (entry.name.endsWith('.repository.ts')) files.push(path);
  }
  return files.sort();
}

/** The statements one call sent, in order, and what the connection answers them. */
class Recorder {
  readonly statements: string[] = [];
  private answered = 0;

  constructor(private readonly answers: unknown[] = []) {}

  /** Keeps the statement; answers the next of `answers`, else no rows as TypeORM gives them. */
  query(sql: unknown): unknown {
    // pg also takes a query object: `{ name, text, values }`.
    const text = typeof sql === 'string' ? sql : (sql as { text?: unknown } | undefined)?.text;
    if (typeof text !== 'string') throw new Error(`a query without SQL text: ${String(sql)}`);
    this.statements.push(text);
    if (this.answered < this.answers.length) return this.answers[this.answered++];
    return /^\s*(UPDATE|DELETE)\b/i.test(text) ? [[], 0] : [];
  }
}

const noEntities = (): never => {
  throw new Error(
    'the recording connection renders SQL a repository writes, not what TypeORM builds for an entity ' +
      'repository (getRepository); mark only methods that send their own SQL',
  );
};

/**
 * What a repository gets for every parameter of its constructor: a stand-in for a `DataSource` (query,
 * createQueryRunner, transaction, manager), for the transaction host of `@nestjs-cls/transactional`
 * (`tx`) and for a pg client (query), recording every statement into `recorder`.
 */
function recordingConnection(recorder: Recorder) {
  const query = (sql: unknown) => Promise.resolve(recorder.query(sql));
  const manager = {
    query,
    getRepository: noEntities,
    transaction: (work: (m: unknown) => Promise<unknown>) => work(manager),
  };
  const runner = {
    manager,
    query,
    connect: () => Promise.resolve(),
    release: () => Promise.resolve(),
    startTransaction: () => Promise.resolve(),
    commitTransaction: () => Promise.resolve(),
    rollbackTransaction: () => Promise.resolve(),
  };
  return {
    ...manager,
    manager,
    tx: manager,
    driver: {},
    createQueryRunner: () => runner,
    createEntityManager: () => manager,
  };
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
  constructor(private readonly recorder: Recorder) {
    super(ORIGIN, 'transaction', recordingConnection(recorder).manager as unknown as EntityManager);
  }

  override async write(build: PieceBuilder, options: PieceOptions = {}): Promise<void> {
    const batch = new WriteBatch();
    batch.add(build, options);
    await batch.run(async (sql) => {
      this.recorder.statements.push(sql);
      return [{}];
    });
  }
}

/**
 * One statement as it appears in a snapshot: its first line as written, the lines after it moved left
 * together (as far as the least indented goes) and indented by two, no blank lines, no trailing spaces.
 */
function formatStatement(sql: string): string {
  const lines = sql
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '');
  if (!lines.length) return ';';
  const [first, ...rest] = lines;
  const indent = Math.min(...rest.map((line) => line.length - line.trimStart().length));
  return [first.trim(), ...rest.map((line) => `  ${line.slice(indent)}`)].join('\n') + ';';
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
  for (const Class of classes) {
    const types = (Reflect.getMetadata('design:paramtypes', Class) as unknown[] | undefined) ?? [];
    for (const { method, queries } of generatedSql(Class)) {
      for (const options of queries) entries.push(...(await call(Class, types.length, method, options)));
    }
  }
  return entries.length ? `${entries.join('\n\n')}\n` : '';
}

/** Calls one marked method with its example arguments; answers its statements, each under its heading. */
async function call(
  Class: RepositoryClass,
  parameters: number,
  method: string,
  options: GenerateSqlOptions,
): Promise<string[]> {
  const recorder = new Recorder(options.answers);
  const connection = recordingConnection(recorder);
  const repository = new Class(
    ...Array.from({ length: Math.max(parameters, Class.length) }, () => connection),
  );
  const args = options.change ? [new RecordingChange(recorder), ...options.params] : options.params;
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
    if (UPDATE) await mkdir(SQL_DIR, { recursive: true });
  });

  it('names one snapshot per repository file', async () => {
    const names = (await repositoryFiles()).map((file) => basename(file, '.ts'));
    expect(new Set(names).size).toBe(names.length);
  });

  it('renders the marked methods of every repository as committed', async () => {
    const rendered = new Map<string, string>();
    for (const file of files) {
      const text = await render(file);
      if (text) rendered.set(`${basename(file, '.ts')}.sql`, text);
    }
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
        { name: 'answered', params: [], answers: [[[], 3]] },
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

  it('lays statements out the same whatever their indentation in the source', () => {
    expect(formatStatement('SELECT a\n         FROM t\n           WHERE x\n')).toBe(
      'SELECT a\n  FROM t\n    WHERE x;',
    );
    expect(formatStatement('\n    DELETE FROM t WHERE a < $1   \n')).toBe('DELETE FROM t WHERE a < $1;');
  });
});
