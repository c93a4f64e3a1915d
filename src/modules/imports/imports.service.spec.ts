import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import * as openpgp from 'openpgp';
import { cardNumber, encryptTo } from '../../../test/support/card-files';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { AppConfig } from '../../config/app-config';
import { ImportsRepository } from './imports.repository';
import { ImportsService } from './imports.service';

/**
 * The import key and uploads on the real repository (the service tier's PGlite): one key per tenant
 * however many first requests race, its private key sealed; an upload refused (and gone from disk) when
 * it is not for the tenant's key, has no format, or is not sent as an encrypted file; another tenant
 * never sees a job.
 */
let db: ServiceDatabase;
let tenant: string;
let other: string;
let dir: string;
let service: ImportsService;

beforeAll(async () => {
  db = await openServiceDatabase();
  tenant = await db.newTenant('imports');
  other = await db.newTenant('other');
  dir = mkdtempSync(join(tmpdir(), 'imports-service-spec-'));
  const config = Object.assign(new AppConfig(), { IMPORT_DIR: dir });
  service = new ImportsService(
    new ImportsRepository(db.dataSource),
    db.tenantKeys,
    db.clock,
    db.work,
    config,
  );
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db.close();
});

const origin = (tenantId = tenant): RequestOrigin => ({ actor: principalOf(tenantId, ['token:import']) });
const upload = (bytes: Buffer, contentType = 'application/octet-stream') => ({
  body: Readable.from([bytes]),
  contentType,
});
const CSV = `number,expiration_month,expiration_year\n${cardNumber(1)},12,2031\n`;

describe('ImportsService', () => {
  it('makes one key per tenant, however many first requests race; the private key is sealed', async () => {
    const keys = await Promise.all([1, 2, 3, 4].map(() => service.key(origin())));
    expect(new Set(keys.map((k) => k.fingerprint)).size).toBe(1);
    expect(keys[0]).toMatchObject({
      algorithm: 'ed25519/cv25519',
      fingerprint: expect.stringMatching(/^[0-9A-F]{40}$/),
    });
    const publicKey = await openpgp.readKey({ armoredKey: keys[0].public_key });
    expect(publicKey.isPrivate()).toBe(false);
    expect(publicKey.getFingerprint().toUpperCase()).toBe(keys[0].fingerprint);
    const rows = await db.rows<{ private_key: Buffer }>(
      `SELECT private_key FROM token_import_keys WHERE tenant_id = $1`,
      [tenant],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].private_key.toString('latin1')).not.toContain('PGP PRIVATE KEY');
    expect((await service.key(origin(other))).fingerprint).not.toBe(keys[0].fingerprint);
  });

  it("refuses a file encrypted to another tenant's key: a 400, no job, nothing left on disk", async () => {
    const theirs = await service.key(origin(other));
    const error = await service
      .create(origin(), upload(await encryptTo(theirs.public_key, CSV, 'cards.csv')), undefined)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'import_key_mismatch',
      kind: 'invalid',
      errors: { file: expect.any(Array) },
    });
    expect(await db.rows(`SELECT 1 FROM token_imports WHERE tenant_id = $1`, [tenant])).toHaveLength(0);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('takes the format from the file name inside the message, else refuses naming format', async () => {
    const key = await service.key(origin());
    const named = await service.create(
      origin(),
      upload(await encryptTo(key.public_key, CSV, 'export.CSV')),
      undefined,
    );
    expect(named).toMatchObject({ status: 'pending', format: 'csv' });
    const unnamed = await encryptTo(key.public_key, CSV, 'export.txt');
    const error = await service.create(origin(), upload(unnamed), undefined).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'validation_failed', errors: { format: expect.any(Array) } });
    expect(await service.create(origin(), upload(unnamed), 'csv')).toMatchObject({ format: 'csv' });
  });

  it('refuses what is not an OpenPGP message, and other media types', async () => {
    await expect(service.create(origin(), upload(Buffer.from(CSV)), 'csv')).rejects.toMatchObject({
      code: 'not_an_openpgp_message',
    });
    await expect(service.create(origin(), upload(Buffer.from(CSV), 'text/csv'), 'csv')).rejects.toMatchObject(
      {
        extras: { code: 'unsupported_media_type' },
        status: 415,
      },
    );
  });

  it("never shows another tenant's job or its results", async () => {
    const key = await service.key(origin());
    const job = await service.create(
      origin(),
      upload(await encryptTo(key.public_key, CSV, 'a.csv')),
      undefined,
    );
    await expect(service.get(origin(other).actor, job.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(service.results(origin(other).actor, job.id, { page: 1, size: 10 })).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await service.get(origin().actor, job.id)).toMatchObject({ id: job.id });
  });
});
