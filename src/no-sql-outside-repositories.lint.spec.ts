import { Rule, RuleTester } from 'eslint';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import tseslint from 'typescript-eslint';

/**
 * The rule that keeps SQL in repositories (eslint-rules/no-sql-outside-repositories.js), on snippets.
 * Which files it applies to is the configuration's part: src/sql-placement.lint.spec.ts runs `npm run lint`'s
 * ESLint over probe files.
 */

const ROOT = join(__dirname, '..');

/** The rule's module, CommonJS as eslint.config.mjs loads it (loaded by path: it lies outside src/). */
const { rule, ALLOWED, readsAsSql } = createRequire(__filename)(
  join(ROOT, 'eslint-rules', 'no-sql-outside-repositories.js'),
) as {
  rule: Rule.RuleModule;
  ALLOWED: { files: string[]; reason: string }[];
  readsAsSql: (text: string) => string | undefined;
};

const statement = (what: string) => ({ messageId: 'statement', data: { what } });
const query = { messageId: 'query' };

describe('vault/no-sql-outside-repositories', () => {
  describe('without type information', () => {
    new RuleTester({ languageOptions: { parser: tseslint.parser } }).run(
      'no-sql-outside-repositories',
      rule,
      {
        valid: [
          "const message = 'please select a token from the list below';",
          "const method = 'DELETE'; const route = 'DELETE /tokens/{id}';",
          "const text = 'Update the webhook settings';",
          'const label = `created ${n} tokens with ${m} keys`;',
          "const css = 'with care as a rule';",
          'service.tokenize(body);',
          'query(sql, params);',
          'db.query();',
          'const withdrawal = "WITHDRAW";',
        ],
        invalid: [
          {
            code: "const sql = 'SELECT id FROM tokens WHERE tenant_id = $1';",
            errors: [statement('SELECT ... FROM')],
          },
          { code: "const lock = 'select pg_advisory_lock($1)';", errors: [statement('SELECT')] },
          { code: 'const r = `(SELECT count(*)::int FROM ${cte})`;', errors: [statement('SELECT ... FROM')] },
          { code: 'const s = `${ctes}SELECT ${results}`;', errors: [statement('SELECT')] },
          { code: 'const s = `insert into ${table} (a) values ($1)`;', errors: [statement('INSERT INTO')] },
          { code: 'const s = `UPDATE ${table} SET a = $1`;', errors: [statement('UPDATE ... SET')] },
          { code: "const s = 'DELETE FROM job_runs WHERE ran_at < $1';", errors: [statement('DELETE FROM')] },
          {
            code: 'const s = `claimed AS (UPDATE t SET x = 1), gone AS (DELETE FROM u)`;',
            errors: [statement('UPDATE ... SET')],
          },
          {
            code: "const s = 'WITH given AS (VALUES (1)) TABLE given';",
            errors: [statement('WITH ... AS (')],
          },
          { code: "const s = 'ALTER TABLE tokens ADD COLUMN x int';", errors: [statement('ALTER')] },
          { code: "const s = 'CREATE UNIQUE INDEX i ON t (a)';", errors: [statement('CREATE')] },
          { code: "const s = 'DROP TABLE t';", errors: [statement('DROP')] },
          { code: "const s = 'TRUNCATE t';", errors: [statement('TRUNCATE')] },
          { code: "const s = 'SELECT a ' + 'FROM b';", errors: [statement('SELECT')] },
          { code: 'await client.query(`LISTEN ${channel}`);', errors: [query] },
          { code: 'await this.dataSource.query(sql, params);', errors: [query] },
          {
            code: "await change.query('SELECT 1 FROM t');",
            errors: [query, statement('SELECT ... FROM')],
          },
        ],
      },
    );
  });

  describe('with type information (as npm run lint runs it)', () => {
    new RuleTester({
      languageOptions: {
        parser: tseslint.parser,
        parserOptions: {
          projectService: { allowDefaultProject: ['probe.ts'] },
          tsconfigRootDir: ROOT,
        },
      },
    }).run('no-sql-outside-repositories', rule, {
      valid: [
        // A `query` method that takes no SQL: the size of a query string's pairs.
        {
          filename: 'probe.ts',
          code: 'declare const sizes: { query(pairs: [string, string][]): number };\nsizes.query([]);',
        },
      ],
      invalid: [
        {
          filename: 'probe.ts',
          code: 'declare const db: { query(sql: string): Promise<unknown[]> };\ndeclare const sql: string;\nvoid db.query(sql);',
          errors: [query],
        },
        {
          filename: 'probe.ts',
          code:
            'declare const pool: { query(q: { name: string; text: string }): Promise<unknown> };\n' +
            "declare const text: string;\nvoid pool.query({ name: 'one', text });",
          errors: [query],
        },
      ],
    });
  });

  it('names a reason for every file where SQL is allowed besides repositories', () => {
    for (const allowed of ALLOWED) {
      expect(allowed.files.length).toBeGreaterThan(0);
      expect(allowed.reason.length).toBeGreaterThan(10);
    }
  });

  it('reads statements, not prose', () => {
    expect(readsAsSql('SELECT pg_try_advisory_xact_lock($1) AS locked')).toBe('SELECT');
    expect(readsAsSql('Pick one to update from the list, then select it from the menu')).toBeUndefined();
    expect(readsAsSql('the key was deleted from the vault')).toBeUndefined();
    expect(readsAsSql('GET /tokens?select=id')).toBeUndefined();
  });
});
