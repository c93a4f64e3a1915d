import { randomUUID } from 'node:crypto';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../../test/support/service-database';
import { ValidationException } from '../../../common/errors/domain.exception';
import type { ExclusiveJobRunner } from '../../../common/jobs/exclusive';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { OrchestrationErrorCode } from '../orchestration.errors';
import type { ProcessorRegistry } from '../processors/processor.registry';
import type { ConnectionRequestDto } from './connection.dto';
import { ConnectionsRepository } from './connections.repository';
import { ConnectionsService, SECRET_PLACEHOLDER } from './connections.service';

/**
 * Connections on the real repositories (the service tier's PGlite): secrets sealed at rest and never
 * answered, each write audited in its change, the verification after the commit and its outcome, the
 * body refused by field with nothing written, and another tenant's connections out of reach. The vendor
 * (its credential check) is faked. Each service starts with an empty key cache, so a key read inside a
 * change would fail (TenantKeysService refuses it).
 */
let db: ServiceDatabase;
let tenant: string;
let other: string;

beforeAll(async () => {
  db = await openServiceDatabase();
  tenant = await db.newTenant('connections');
  other = await db.newTenant('other');
  await db.subscribe(tenant);
});
afterAll(() => db.close());

const SECRET = 'sk_test_not_a_real_key_123';

function setup() {
  const verifyCredentials = jest.fn((_credentials: Record<string, string>) =>
    Promise.resolve<{ ok: boolean; reason?: string }>({ ok: true }),
  );
  const processors = {
    vendorFormulas: () => ['stripe-card'],
    for: () => ({ verifyCredentials, checkFields: () => ({}) }),
  } as unknown as ProcessorRegistry;
  const service = new ConnectionsService(
    new ConnectionsRepository(db.dataSource),
    db.freshTenantKeys(),
    processors,
    db.clock,
    {} as ExclusiveJobRunner,
    db.work,
  );
  /** Waits for the verifications started after commits (the service stops taking new ones). */
  const verified = () => service.onApplicationShutdown();
  return { service, verifyCredentials, verified };
}

const origin = (tenantId = tenant): RequestOrigin => ({
  actor: principalOf(tenantId, ['orchestration:connections']),
});
const request = (extra: Partial<ConnectionRequestDto> = {}): ConnectionRequestDto => ({
  connection_formula_id: 'stripe-card',
  method: 'card',
  display_name: 'Stripe',
  fields: [{ key: 'secret_key', value: SECRET }],
  accepted_countries: ['US'],
  accepted_currencies: ['USD'],
  ...extra,
});

const stored = async (id: string) =>
  (
    await db.rows<{ status: string; fields: object; secrets: Buffer | null; deleted_at: Date | null }>(
      'SELECT status, fields, secrets, deleted_at FROM connections WHERE id = $1',
      [id],
    )
  )[0];
const auditOf = async (id: string) =>
  (
    await db.rows<{ message: string }>(
      'SELECT message FROM audit_logs WHERE entity_id = $1 ORDER BY created_at, ctid',
      [id],
    )
  ).map((row) => row.message);
const eventsOf = async (id: string) =>
  (
    await db.rows<{ status: string }>(
      `SELECT data->>'status' AS status FROM webhook_events WHERE entity_id = $1 ORDER BY created_at, ctid`,
      [id],
    )
  ).map((row) => row.status);
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (error: { code?: string; errors?: object }) =>
      error instanceof ValidationException ? Object.keys(error.errors ?? {}) : error.code,
  );

describe('ConnectionsService (real repositories on PGlite, fake vendor)', () => {
  it('creates a connection with its secret sealed, then verifies it once committed', async () => {
    const { service, verifyCredentials, verified } = setup();
    const created = await service.create(origin(), request());
    expect(created.fields).toEqual([{ key: 'secret_key', value: SECRET_PLACEHOLDER }]);
    expect(created.status).toBe('pending');
    await verified();
    expect(verifyCredentials).toHaveBeenCalledWith({ secret_key: SECRET }, undefined);
    const row = await stored(created.id);
    expect(row).toMatchObject({ status: 'available', fields: [{ key: 'secret_key', value: null }] });
    expect(row.secrets!.toString('latin1')).not.toContain(SECRET);
    expect(await auditOf(created.id)).toEqual(['Connection created', 'connection verified: available']);
    expect(await eventsOf(created.id)).toEqual(['available']);
    const audited = await db.rows<{ message: string }>('SELECT message FROM audit_logs');
    expect(JSON.stringify(audited)).not.toContain(SECRET);
  });

  it('records a failed verification with its reason, never the credential', async () => {
    const { service, verifyCredentials, verified } = setup();
    verifyCredentials.mockResolvedValueOnce({ ok: false, reason: 'invalid_api_key' });
    const created = await service.create(origin(), request());
    await verified();
    expect((await stored(created.id)).status).toBe('failed');
    expect((await auditOf(created.id)).at(-1)).toBe('connection verification failed: invalid_api_key');
  });

  it('refuses a body by field before any change: nothing written', async () => {
    const { service } = setup();
    const before = await db.rows('SELECT id FROM connections');
    expect(
      await refusal(
        service.create(
          origin(),
          request({
            method: 'paypal',
            fields: [{ key: 'secret_key', value: SECRET_PLACEHOLDER }],
            accepted_currencies: ['XXX'],
          }),
        ),
      ),
    ).toEqual(['method', 'fields[0].value', 'accepted_currencies[0]']);
    expect(await refusal(service.create(origin(), request({ connection_formula_id: 'nope' })))).toEqual([
      'connection_formula_id',
    ]);
    expect(await db.rows('SELECT id FROM connections')).toEqual(before);
  });

  it('an update keeps a secret sent back as its placeholder, sets the connection pending and reports it', async () => {
    const first = setup();
    const created = await first.service.create(origin(), request());
    await first.verified();
    const { service, verifyCredentials, verified } = setup();
    const updated = await service.update(
      origin(),
      created.id,
      request({ display_name: 'Stripe EU', fields: [{ key: 'secret_key', value: SECRET_PLACEHOLDER }] }),
    );
    expect(updated).toMatchObject({ display_name: 'Stripe EU', status: 'pending' });
    await verified();
    expect(verifyCredentials).toHaveBeenCalledWith({ secret_key: SECRET }, undefined);
    expect((await service.loadForPayment(tenant, created.id))!.credentials).toEqual({ secret_key: SECRET });
    expect(await auditOf(created.id)).toEqual([
      'Connection created',
      'connection verified: available',
      'Connection updated',
      'connection verified: available',
    ]);
  });

  it("another tenant's caller neither sees, changes, deletes nor pays with a connection", async () => {
    const { service, verified } = setup();
    const created = await service.create(origin(), request());
    await verified();
    const theirs = setup().service;
    for (const call of [
      theirs.get(origin(other).actor, created.id),
      theirs.update(origin(other), created.id, request()),
      theirs.delete(origin(other), created.id),
    ])
      expect(await refusal(call)).toBe(OrchestrationErrorCode.NotFound);
    expect(await theirs.list(origin(other).actor)).toEqual([]);
    expect(await theirs.loadForPayment(other, created.id)).toBeUndefined();
    expect(await auditOf(created.id)).toEqual(['Connection created', 'connection verified: available']);
  });

  it('deletes a connection no transaction refers to; keeps one that has transactions, marked deleted', async () => {
    const { service, verified } = setup();
    const unused = await service.create(origin(), request());
    const used = await service.create(origin(), request());
    await verified();
    await db.rows(
      `INSERT INTO transactions (tenant_id, id, connection_id, token_id, status, intent, amount, currency,
         payment_source, merchant_initiated, is_subsequent_payment, payment_method, created_at, updated_at)
       VALUES ($1, $2, $3, 'tok', 'authorization_failed', 'authorize', 100, 'USD', 'ecommerce', false, false,
         '{}', now(), now())`,
      [tenant, randomUUID(), used.id],
    );
    await service.delete(origin(), unused.id);
    await service.delete(origin(), used.id);
    expect(await stored(unused.id)).toBeUndefined();
    expect((await stored(used.id)).deleted_at).toBeInstanceOf(Date);
    expect(await refusal(service.get(origin().actor, used.id))).toBe(OrchestrationErrorCode.NotFound);
    expect(await service.loadForPayment(tenant, used.id, true)).toMatchObject({
      credentials: { secret_key: SECRET },
    });
    expect((await auditOf(used.id)).at(-1)).toBe('Connection deleted');
  });
});
