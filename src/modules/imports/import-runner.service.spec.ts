import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { badLuhn, cardNumber, digitsShown, encryptTo } from '../../../test/support/card-files';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import { importWritersOn } from '../../../test/support/service-stacks';
import type { ExclusiveJobRunner } from '../../common/jobs/exclusive';
import type { Metrics } from '../../common/metrics/metrics';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { AppConfig } from '../../config/app-config';
import { IMPORT_BATCH, ImportRunnerService } from './import-runner.service';
import { ImportsRepository } from './imports.repository';
import { ImportsService } from './imports.service';
import { ABANDONED_UPLOAD_MS } from './upload-sweep';

/**
 * Import jobs on the real repositories (the service tier's PGlite): the tokens, buyers, stored cards and
 * results a file leaves, the counts, the checkpoint a stopped run resumes from without making a token
 * twice, and the job's audit rows (one per event).
 */
let db: ServiceDatabase;
let tenant: string;
let dir: string;

beforeAll(async () => {
  db = await openServiceDatabase();
  tenant = await db.newTenant('imports');
  dir = mkdtempSync(join(tmpdir(), 'imports-spec-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db.close();
});

const origin = (tenantId = tenant): RequestOrigin => ({ actor: principalOf(tenantId, ['token:import']) });

function setup(stopAfter = Infinity) {
  const config = Object.assign(new AppConfig(), { IMPORT_DIR: dir, JOBS_ENABLED: false });
  const imports = new ImportsRepository(db.dataSource);
  const service = new ImportsService(imports, db.tenantKeys, db.clock, db.work, config);
  let batches = 0;
  const jobs = {
    get stopping() {
      return ++batches > stopAfter;
    },
  } as unknown as ExclusiveJobRunner;
  const { cards, buyers, connectionTokens } = importWritersOn(db);
  const runner = new ImportRunnerService(
    imports,
    service,
    cards,
    buyers,
    connectionTokens,
    db.tenantKeys,
    db.clock,
    jobs,
    db.work,
    { tokensCreated: jest.fn() } as unknown as Metrics,
    config,
  );
  return { service, runner };
}

const upload = (bytes: Buffer, contentType = 'application/pgp-encrypted') => ({
  body: Readable.from([bytes]),
  contentType,
});

async function results(service: ImportsService, id: string, tenantId = tenant) {
  const page = await service.results(origin(tenantId).actor, id, { page: 1, size: 100 });
  return page.data as unknown as Record<string, unknown>[];
}

describe('ImportRunnerService', () => {
  it('makes one card token per valid line, finds duplicates, stores cards for buyers, reports failures', async () => {
    const { service, runner } = setup();
    const key = await service.key(origin());
    const [a, b, c] = [cardNumber(1), cardNumber(2), cardNumber(3)];
    const csv = [
      'expiration_year,number,expiration_month,external_id,buyer_external_id,metadata.plan,holder_name',
      `2031,${a},12,ext-a,buyer-x,gold,Ada Lovelace`,
      `2031,${b},1,ext-b,buyer-x,,`,
      `2031,${a},12,ext-again,buyer-y,,`,
      `2031,${badLuhn(c)},12,ext-luhn,,,`,
      `2020,${c},12,ext-expired,,,`,
      `2031,${c},12`,
      ``,
      `,${c},12,ext-missing,,,`,
    ].join('\n');
    const job = await service.create(
      origin(),
      upload(await encryptTo(key.public_key, csv, 'cards.csv')),
      undefined,
    );
    expect(job).toMatchObject({ status: 'pending', format: 'csv', total: null });

    await runner.run(tenant, job.id);

    expect(await service.get(origin().actor, job.id)).toMatchObject({
      status: 'completed',
      total: 7,
      imported: 2,
      duplicates: 1,
      failed: 4,
      error: null,
    });
    const lines = await results(service, job.id);
    expect(
      lines.map(({ line, status, error, external_id }) => ({ line, status, error, external_id })),
    ).toEqual([
      { line: 2, status: 'imported', external_id: 'ext-a', error: undefined },
      { line: 3, status: 'imported', external_id: 'ext-b', error: undefined },
      {
        line: 4,
        status: 'duplicate',
        external_id: 'ext-again',
        error: { field: 'buyer_external_id', code: 'stored_for_another_buyer' },
      },
      {
        line: 5,
        status: 'failed',
        external_id: 'ext-luhn',
        error: { field: 'number', code: 'luhn_check_failed' },
      },
      {
        line: 6,
        status: 'failed',
        external_id: 'ext-expired',
        error: { field: 'expiration_year', code: 'expired' },
      },
      {
        line: 7,
        status: 'failed',
        external_id: undefined,
        error: { field: null, code: 'wrong_column_count' },
      },
      {
        line: 9,
        status: 'failed',
        external_id: 'ext-missing',
        error: { field: 'expiration_year', code: 'missing' },
      },
    ]);
    expect(lines[2].token_id).toBe(lines[0].token_id);
    for (const line of lines) expect(digitsShown(line)).toBe('');

    const tokens = await db.rows<{ metadata: unknown; fingerprint_groups: unknown; created_by: string }>(
      `SELECT metadata, fingerprint_groups, created_by FROM tokens WHERE tenant_id = $1 ORDER BY created_at`,
      [tenant],
    );
    expect(tokens).toHaveLength(2);
    // Never counted by the card enumeration guard: the groups wait for the first read that shows a fingerprint.
    expect(tokens.every((t) => Array.isArray(t.fingerprint_groups))).toBe(true);
    expect(tokens.map((t) => t.metadata)).toContainEqual({ plan: 'gold' });
    const stored = await db.rows<{ external_identifier: string; n: number }>(
      `SELECT b.external_identifier, count(m.token_id)::int AS n FROM buyers b
         LEFT JOIN buyer_payment_methods m ON m.tenant_id = b.tenant_id AND m.buyer_id = b.id
        WHERE b.tenant_id = $1 GROUP BY 1 ORDER BY 1`,
      [tenant],
    );
    // buyer-y's line was a duplicate of a card stored for buyer-x: a token is stored for one buyer.
    expect(stored).toEqual([
      { external_identifier: 'buyer-x', n: 2 },
      { external_identifier: 'buyer-y', n: 0 },
    ]);
    const audit = await db.rows<{ message: string; actor_type: string }>(
      `SELECT message, actor_type FROM audit_logs WHERE tenant_id = $1 AND entity_type = 'token_import' ORDER BY pos`,
      [tenant],
    );
    expect(audit.map((r) => r.message)).toEqual([
      'Import key created',
      'Import created',
      'Import started',
      'Import completed',
    ]);
    expect(existsSync(service.fileOf({ tenant_id: tenant, id: job.id }))).toBe(false);
  });

  it('reads JSONL lines, and reports bad JSON and text that is not UTF-8 by line', async () => {
    const { service, runner } = setup();
    const key = await service.key(origin());
    const n = cardNumber(10);
    const file = Buffer.concat([
      Buffer.from(
        `${JSON.stringify({ number: n, expiration_month: 3, expiration_year: 2032, metadata: { source: 'old' } })}\n` +
          `{"number": \n`,
      ),
      Buffer.from([0xff, 0xfe, 0x0a]),
      Buffer.from(
        `${JSON.stringify({ number: n, expiration_month: 3, expiration_year: 2032, color: 'x' })}\n`,
      ),
    ]);
    const job = await service.create(
      origin(),
      upload(await encryptTo(key.public_key, file, 'cards.jsonl', true)),
      undefined,
    );
    expect(job.format).toBe('jsonl');
    await runner.run(tenant, job.id);
    const lines = await results(service, job.id);
    expect(lines.map((r) => [r.line, r.status, r.error])).toEqual([
      [1, 'imported', undefined],
      [2, 'failed', { field: null, code: 'invalid_json' }],
      [3, 'failed', { field: null, code: 'invalid_encoding' }],
      [4, 'failed', { field: null, code: 'unknown_field' }],
    ]);
  });

  it('resumes a stopped job at its checkpoint: every line once, no token made twice', async () => {
    const stopped = setup(0);
    const key = await stopped.service.key(origin());
    const count = IMPORT_BATCH * 2 + 500;
    const csv = ['number,expiration_month,expiration_year'];
    for (let i = 0; i < count; i++) csv.push(`${cardNumber(100_000 + i)},12,2033`);
    const job = await stopped.service.create(
      origin(),
      upload(await encryptTo(key.public_key, csv.join('\n'), 'x.csv')),
      'csv',
    );
    expect(await stopped.runner.run(tenant, job.id)).toBe(false);
    expect(await stopped.service.get(origin().actor, job.id)).toMatchObject({
      status: 'processing',
      total: count,
      imported: IMPORT_BATCH,
    });

    const { service, runner } = setup();
    await runner.run(tenant, job.id);
    expect(await service.get(origin().actor, job.id)).toMatchObject({ status: 'completed', imported: count });
    const [{ n }] = await db.rows<{ n: number }>(
      `SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1 AND expires_at IS NULL AND metadata IS NULL
         AND card_bin LIKE '41111%' AND created_at >= $2`,
      [tenant, new Date(job.created_at)],
    );
    expect(n).toBe(count);
    const [{ lines }] = await db.rows<{ lines: number }>(
      `SELECT count(DISTINCT line)::int AS lines FROM token_import_results WHERE tenant_id = $1 AND import_id = $2`,
      [tenant, job.id],
    );
    expect(lines).toBe(count);
  });

  it('fails a CSV file whose header names an unknown column, making nothing', async () => {
    const { service, runner } = setup();
    const key = await service.key(origin());
    const csv = `number,expiration_month,expiration_year,cvv\n${cardNumber(7)},12,2031,123\n`;
    const job = await service.create(
      origin(),
      upload(await encryptTo(key.public_key, csv, 'a.csv')),
      undefined,
    );
    await runner.run(tenant, job.id);
    expect(await service.get(origin().actor, job.id)).toMatchObject({
      status: 'failed',
      error: { code: 'csv_unknown_column' },
      imported: 0,
    });
  });

  it('deletes the uploads no job waits for once nothing wrote to them for an hour, every 10 minutes', async () => {
    const { service, runner } = setup();
    const key = await service.key(origin());
    const job = await service.create(
      origin(),
      upload(await encryptTo(key.public_key, 'number,expiration_month,expiration_year\n', 'cards.csv')),
      undefined,
    );
    const waited = service.fileOf({ tenant_id: tenant, id: job.id });
    const abandoned = service.fileOf({ tenant_id: tenant, id: randomUUID() });
    const arriving = service.fileOf({ tenant_id: tenant, id: randomUUID() });
    const unrelated = join(dir, 'notes.txt');
    for (const path of [abandoned, arriving, unrelated]) writeFileSync(path, 'bytes');
    const hourAgo = new Date(Date.now() - ABANDONED_UPLOAD_MS - 1_000);
    for (const path of [waited, abandoned, unrelated]) utimesSync(path, hourAgo, hourAgo);

    expect(await runner.sweep()).toBe(1);
    expect(existsSync(abandoned)).toBe(false);
    // A job waits for it; one still arriving; a file that is no upload.
    for (const path of [waited, arriving, unrelated]) expect(existsSync(path)).toBe(true);

    // Once its job ended (a process died before deleting it), the next sweep, 10 minutes on, takes it.
    await runner.run(tenant, job.id);
    writeFileSync(waited, 'left behind');
    utimesSync(waited, hourAgo, hourAgo);
    expect(await runner.sweep()).toBe(0);
    jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 10 * 60_000);
    try {
      expect(await runner.sweep()).toBe(1);
    } finally {
      jest.restoreAllMocks();
    }
    expect(existsSync(waited)).toBe(false);
    rmSync(arriving);
    rmSync(unrelated);
  });
});
