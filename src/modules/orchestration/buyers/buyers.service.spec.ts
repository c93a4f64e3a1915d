import { randomUUID } from 'node:crypto';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../../test/support/service-database';
import type { Principal } from '../../../common/auth/principal';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { CardEnumerationRefused, type TokensService } from '../../tokens/tokens.service';
import { OrchestrationErrorCode } from '../orchestration.errors';
import { BuyersRepository } from './buyers.repository';
import { BuyersService } from './buyers.service';
import { ConnectionTokensRepository } from './connection-tokens.repository';

/**
 * Buyers and their stored cards on the real repositories (the service tier's PGlite): what each write
 * leaves in the database (the buyer, its cards, audit rows, events, the idempotency record), what is
 * refused and with which code, and that another tenant neither sees nor touches a buyer. The tokens
 * service is faked: which token is usable, and whether the card enumeration guard lets a comparison by.
 */
let db: ServiceDatabase;
let tenant: string;
let other: string;

beforeAll(async () => {
  db = await openServiceDatabase();
  tenant = await db.newTenant('buyers');
  other = await db.newTenant('other');
  await db.subscribe(tenant);
});
afterAll(() => db.close());

/** A token as the tokens service answers it to other modules. */
type TokenRow = NonNullable<Awaited<ReturnType<TokensService['usableRow']>>>;

const PERMISSIONS = [
  'orchestration:buyers:create',
  'orchestration:buyers:read',
  'orchestration:buyers:update',
];
const origin = (tenantId = tenant, idempotency?: RequestOrigin['idempotency']): RequestOrigin => ({
  actor: principalOf(tenantId, PERMISSIONS),
  ...(idempotency ? { idempotency } : {}),
});

/** A card token of the tenant's, in the tokens table (the stored cards' details come from its mask). */
async function cardToken(fingerprint = `fp-${randomUUID()}`, tenantId = tenant): Promise<TokenRow> {
  const id = randomUUID();
  await db.rows(
    `INSERT INTO tokens (tenant_id, id, type, data, mask, card_brand, fingerprint, fingerprint_expression,
       containers, created_at)
     VALUES ($1, $2, 'card', '\\x00', $3, 'visa', $4, '{{ data.number }}', '{/pci/high/}', now())`,
    [tenantId, id, { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 }, fingerprint],
  );
  return { id, tenant_id: tenantId, type: 'card', fingerprint } as TokenRow;
}

function setup() {
  const usable = new Map<string, TokenRow>();
  const tokens = {
    usableRow: jest.fn((who: Principal, id: string) =>
      Promise.resolve(usable.get(id)?.tenant_id === who.tenantId ? usable.get(id) : undefined),
    ),
    comparable: jest.fn(() => Promise.resolve(true)),
    fingerprintRefused: jest.fn(() => Promise.resolve()),
  };
  const service = new BuyersService(
    new BuyersRepository(db.dataSource),
    tokens as unknown as TokensService,
    new ConnectionTokensRepository(db.dataSource),
    db.clock,
    db.work,
  );
  return { service, tokens, usable };
}

const buyerRow = async (id: string) =>
  (await db.rows('SELECT tenant_id, external_identifier, display_name FROM buyers WHERE id = $1', [id]))[0];
const auditOf = async (id: string) =>
  (
    await db.rows<{ message: string }>(
      'SELECT message FROM audit_logs WHERE entity_id = $1 ORDER BY created_at, ctid',
      [id],
    )
  ).map((row) => row.message);
const eventsOf = (id: string) =>
  db.rows<{ type: string; data: object }>(
    'SELECT type, data FROM webhook_events WHERE entity_id = $1 ORDER BY created_at, ctid',
    [id],
  );
const cardsOf = (buyerId: string) =>
  db.rows<{ token_id: string }>('SELECT token_id FROM buyer_payment_methods WHERE buyer_id = $1', [buyerId]);
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (error: { code?: string }) => error.code,
  );

describe('BuyersService (real repositories on PGlite)', () => {
  it('creates a buyer with its audit row and event, and stores the idempotent answer in the same change', async () => {
    const { service } = setup();
    const who = origin().actor;
    const claim = await db.claim(who, 'create-buyer-1', { external_identifier: 'cus-1' });
    const buyer = await service.create(origin(tenant, claim), {
      external_identifier: 'cus-1',
      display_name: 'Ada',
    });
    expect(buyer).toMatchObject({ type: 'buyer', external_identifier: 'cus-1', display_name: 'Ada' });
    expect(await buyerRow(buyer.id)).toEqual({
      tenant_id: tenant,
      external_identifier: 'cus-1',
      display_name: 'Ada',
    });
    expect(await auditOf(buyer.id)).toEqual(['Buyer created']);
    expect(await eventsOf(buyer.id)).toEqual([{ type: 'buyer:created', data: buyer }]);
    const [record] = await db.rows<{ state: string; response_status: number }>(
      `SELECT state, response_status FROM idempotency_records WHERE tenant_id = $1`,
      [tenant],
    );
    expect(record).toEqual({ state: 'completed', response_status: 201 });
  });

  it('refuses an external identifier the tenant already uses (409), writing nothing; another tenant may use it', async () => {
    const { service } = setup();
    await service.create(origin(), { external_identifier: 'taken' });
    expect(await refusal(service.create(origin(), { external_identifier: 'taken', display_name: 'B' }))).toBe(
      OrchestrationErrorCode.Conflict,
    );
    const rows = await db.rows(`SELECT id FROM buyers WHERE external_identifier = 'taken'`);
    expect(rows).toHaveLength(1);
    expect(
      await db.rows(
        `SELECT 1 FROM audit_logs WHERE message = 'Buyer created' AND entity_id NOT IN (SELECT id::text FROM buyers)`,
      ),
    ).toEqual([]);
    expect(await service.create(origin(other), { external_identifier: 'taken' })).toMatchObject({
      external_identifier: 'taken',
    });
  });

  it('updates a buyer; a taken identifier is a 409 and the change rolls back whole', async () => {
    const { service } = setup();
    const a = await service.create(origin(), { external_identifier: 'upd-a' });
    await service.create(origin(), { external_identifier: 'upd-b' });
    const updated = await service.update(origin(), a.id, {
      external_identifier: 'upd-a2',
      display_name: 'Al',
    });
    expect(updated).toMatchObject({ id: a.id, external_identifier: 'upd-a2', display_name: 'Al' });
    expect(await refusal(service.update(origin(), a.id, { external_identifier: 'upd-b' }))).toBe(
      OrchestrationErrorCode.Conflict,
    );
    expect(await buyerRow(a.id)).toMatchObject({ external_identifier: 'upd-a2', display_name: 'Al' });
    expect(await auditOf(a.id)).toEqual(['Buyer created', 'Buyer updated']);
    expect((await eventsOf(a.id)).map((e) => e.type)).toEqual(['buyer:created', 'buyer:updated']);
  });

  it("another tenant's caller neither sees nor touches a buyer (404, as for none)", async () => {
    const { service } = setup();
    const buyer = await service.create(origin(), { external_identifier: 'mine', display_name: 'Mine' });
    for (const call of [
      service.get(origin(other).actor, buyer.id),
      service.update(origin(other), buyer.id, { display_name: 'Theirs' }),
      service.delete(origin(other), buyer.id),
      service.listMethods(origin(other).actor, buyer.id),
      service.detach(origin(other), buyer.id, randomUUID()),
    ])
      expect(await refusal(call)).toBe(OrchestrationErrorCode.NotFound);
    const page = await service.list(origin(other).actor, { page: 1, size: 20, search: 'Mine' });
    expect(page.data).toEqual([]);
    expect(await buyerRow(buyer.id)).toMatchObject({ display_name: 'Mine' });
    expect(await auditOf(buyer.id)).toEqual(['Buyer created']);
  });

  it("lists the tenant's buyers by search, newest first, paged", async () => {
    const { service } = setup();
    const first = await service.create(origin(), { display_name: 'Listed One' });
    db.clock.advance(1_000);
    const second = await service.create(origin(), { display_name: 'listed two' });
    const page = await service.list(origin().actor, { page: 1, size: 1, search: 'LISTED' });
    expect(page.pagination).toMatchObject({ total_items: 2, total_pages: 2 });
    expect(page.data.map((b) => b.id)).toEqual([second.id]);
    expect((await service.list(origin().actor, { page: 2, size: 1, search: 'listed' })).data[0].id).toBe(
      first.id,
    );
  });

  it('stores a card once: audited when stored, the same answer again without a second row or audit', async () => {
    const { service, usable } = setup();
    const buyer = await service.create(origin(), { display_name: 'Cards' });
    const token = await cardToken();
    usable.set(token.id, token);
    const answers: boolean[] = [];
    const stored = await service.attach(origin(), buyer.id, { token: token.id }, (c) => answers.push(c));
    expect(stored).toMatchObject({ id: token.id, buyer_id: buyer.id, label: '4242', status: 'active' });
    const again = await service.attach(origin(), buyer.id, { token: token.id }, (c) => answers.push(c));
    expect(again).toEqual(stored);
    expect(answers).toEqual([true, false]);
    expect(await cardsOf(buyer.id)).toEqual([{ token_id: token.id }]);
    expect(await auditOf(buyer.id)).toEqual(['Buyer created', 'Payment method stored']);
    expect(await service.listMethods(origin().actor, buyer.id)).toEqual([stored]);
  });

  it('refuses a token stored for another buyer (409), an unknown token (400), and a comparison past the guard', async () => {
    const { service, usable, tokens } = setup();
    const a = await service.create(origin(), { display_name: 'A' });
    const b = await service.create(origin(), { display_name: 'B' });
    const token = await cardToken();
    usable.set(token.id, token);
    await service.attach(origin(), a.id, { token: token.id });
    expect(await refusal(service.attach(origin(), b.id, { token: token.id }))).toBe(
      OrchestrationErrorCode.Conflict,
    );
    await expect(service.attach(origin(), b.id, { token: randomUUID() })).rejects.toMatchObject({
      errors: { token: expect.any(Array) },
    });
    const guarded = await cardToken();
    usable.set(guarded.id, guarded);
    tokens.comparable.mockResolvedValueOnce(false);
    await expect(service.attach(origin(), b.id, { token: guarded.id })).rejects.toBeInstanceOf(
      CardEnumerationRefused,
    );
    expect(tokens.fingerprintRefused).toHaveBeenCalledTimes(1);
    expect(await cardsOf(b.id)).toEqual([]);
    expect(await auditOf(b.id)).toEqual(['Buyer created']);
  });

  it('detaches a stored card (its token stays); deleting the buyer drops its cards, with its audit row and event', async () => {
    const { service, usable } = setup();
    const buyer = await service.create(origin(), { display_name: 'Leaving' });
    const [one, two] = [await cardToken(), await cardToken()];
    usable.set(one.id, one).set(two.id, two);
    await service.attach(origin(), buyer.id, { token: one.id });
    await service.attach(origin(), buyer.id, { token: two.id });
    await service.detach(origin(), buyer.id, one.id);
    expect(await refusal(service.detach(origin(), buyer.id, one.id))).toBe(OrchestrationErrorCode.NotFound);
    expect(await cardsOf(buyer.id)).toEqual([{ token_id: two.id }]);
    expect(await db.rows('SELECT id FROM tokens WHERE id = $1', [one.id])).toHaveLength(1);
    await service.delete(origin(), buyer.id);
    expect(await buyerRow(buyer.id)).toBeUndefined();
    expect(await cardsOf(buyer.id)).toEqual([]);
    expect((await auditOf(buyer.id)).at(-1)).toBe('Buyer deleted');
    expect((await eventsOf(buyer.id)).at(-1)).toMatchObject({ type: 'buyer:deleted' });
    expect(await refusal(service.get(origin().actor, buyer.id))).toBe(OrchestrationErrorCode.NotFound);
  });
});
