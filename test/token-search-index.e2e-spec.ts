import 'reflect-metadata';
import { createHash, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/load-config';
import { openDatabase } from '../src/database/data-source';
import { parseTokenQuery } from '../src/modules/tokens/search/search-language';
import {
  keysetPageSql,
  offsetPageSql,
  type SearchScope,
  type SqlStatement,
  type TokenSearch,
} from '../src/modules/tokens/search/token-search.repository';
import { privatePrincipal } from './support/app';
import { createDatabase, dropDatabase } from './support/test-database';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The digest the test rows carry for search index value `v<i>` (any 32 bytes do: only equality matters). */
const digestOf = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * The SQL the search compiler produces, EXPLAINed on 1,000,000 tokens of one tenant: each typical query
 * (fingerprint, search index, metadata with type, two ids) reaches its tokens through an index, for the
 * v1 count and page and the v2 keyset page alike; no plan reads the tokens table sequentially.
 */
describe('token search plans on 1,000,000 tokens', () => {
  let name: string;
  let db: DataSource;
  const tenantId = randomUUID();
  const ids: string[] = [];

  beforeAll(async () => {
    const created = await createDatabase('vault_test_token_search');
    name = created.name;
    db = await openDatabase(loadConfig({ DATABASE_URL: created.url }));
    await db.query(`INSERT INTO tenants (id, name, created_at) VALUES ($1, 'big', now())`, [tenantId]);
    // Types, 100,000 customers, two plans, containers in three places, an expiry on one token in ten.
    await db.query(
      `INSERT INTO tokens (id, tenant_id, type, data, fingerprint, fingerprint_expression, metadata, containers,
                           expires_at, created_at)
       SELECT gen_random_uuid(), $1::uuid, (ARRAY['card','bank','token'])[1 + i % 3], '\\x00'::bytea,
              md5(i::text), '{{ data }}',
              jsonb_build_object('customer_id', 'cust_' || (i % 100000), 'plan', (ARRAY['gold','silver'])[1 + i % 2]),
              ARRAY[(ARRAY['/pci/high/','/general/high/','/bank/high/'])[1 + i % 3]],
              CASE WHEN i % 10 = 0 THEN now() + interval '1 year' END,
              now() - (i * interval '31 seconds')
         FROM generate_series(1, 1000000) AS i`,
      [tenantId],
    );
    // One search index digest per token: sha256 of 'v' || its row number.
    await db.query(
      `INSERT INTO token_search_indexes (tenant_id, token_id, digest)
       SELECT $1::uuid, id, sha256(convert_to('v' || row_number() OVER (ORDER BY created_at DESC), 'UTF8'))
         FROM tokens WHERE tenant_id = $1`,
      [tenantId],
    );
    await db.query('ANALYZE tokens');
    await db.query('ANALYZE token_search_indexes');
    const some: { id: string }[] = await db.query(
      `SELECT id FROM tokens WHERE tenant_id = $1 ORDER BY created_at DESC OFFSET 500000 LIMIT 2`,
      [tenantId],
    );
    ids.push(...some.map((row) => row.id));
  }, 600_000);

  afterAll(async () => {
    await db?.destroy();
    if (name) await dropDatabase(name);
  });

  const scope = (): SearchScope => ({
    who: privatePrincipal(tenantId, ['token:search']),
    permission: 'token:search',
    now: new Date(),
  });
  const search = (query: string): TokenSearch => ({ query: parseTokenQuery(query), digest: digestOf });

  async function planOf(statement: SqlStatement): Promise<PlanNode[]> {
    const rows: { 'QUERY PLAN': { Plan: PlanNode }[] }[] = await db.query(
      `EXPLAIN (FORMAT JSON) ${statement.sql}`,
      statement.params,
    );
    return nodes(rows[0]['QUERY PLAN'][0].Plan);
  }

  /** The v1 count, the v1 page and the v2 page of a query: the index names each plan uses. */
  async function indexesOf(query: string): Promise<string[][]> {
    const { count, page } = offsetPageSql(scope(), search(query), { page: 1, size: 20 });
    const keyset = keysetPageSql(scope(), search(query), { size: 20 });
    const used: string[][] = [];
    for (const statement of [count, page, keyset]) {
      const planNodes = await planOf(statement);
      const seq = planNodes.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']);
      expect(seq).toEqual([]);
      used.push([...new Set(planNodes.flatMap((n) => (n['Index Name'] ? [n['Index Name']] : [])))].sort());
    }
    process.stdout.write(`${query}: ${used.map((u) => u.join('+')).join(' | ')}\n`);
    return used;
  }

  it('has a million tokens', async () => {
    expect((await db.query('SELECT count(*)::int AS n FROM tokens'))[0].n).toBe(1_000_000);
  });

  it('fingerprint:x probes (tenant_id, fingerprint)', async () => {
    for (const used of await indexesOf(`fingerprint:${createHash('md5').update('77').digest('hex')}`))
      expect(used).toContain('tokens_tenant_fingerprint_idx');
  });

  it('data:x probes the search index digests, then the tokens by primary key', async () => {
    for (const used of await indexesOf('data:v123456')) {
      expect(used).toContain('token_search_indexes_tenant_digest_idx');
      expect(used).toContain('tokens_pkey');
    }
  });

  it('metadata.k:v AND type:card uses the metadata GIN index', async () => {
    for (const used of await indexesOf('metadata.customer_id:cust_4242 AND type:card'))
      expect(used).toContain('tokens_metadata_idx');
  });

  it('id:a OR id:b probes the primary key twice', async () => {
    for (const used of await indexesOf(`id:${ids[0]} OR id:${ids[1]}`)) expect(used).toContain('tokens_pkey');
  });

  it('the queries find what they look for', async () => {
    const run = async (query: string): Promise<number> => {
      const { count } = offsetPageSql(scope(), search(query), { page: 1, size: 20 });
      const rows: { total: number }[] = await db.query(count.sql, count.params);
      return rows[0].total;
    };
    expect(await run(`id:${ids[0]} OR id:${ids[1]}`)).toBe(2);
    expect(await run('data:v123456')).toBe(1);
    // customer_id cust_4242 is on rows 4242, 104242, ...; type card on rows divisible by 3.
    expect(await run('metadata.customer_id:cust_4242 AND type:card')).toBe(
      Array.from({ length: 10 }, (_, k) => 4242 + k * 100000).filter((i) => i % 3 === 0).length,
    );
  });
});
