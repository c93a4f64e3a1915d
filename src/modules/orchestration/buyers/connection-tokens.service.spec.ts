import {
  addBuyer,
  audit,
  candidateId,
  CONNECTION,
  count,
  OTHER,
  principal,
  refusedWith,
  setup,
  storeCard,
  tableRows,
  TENANT,
  TOKEN,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import type { ConnectionTokenEntryDto } from './buyer.dto';

const BUYER = '00000000-0000-4000-8000-0000000000b1';
const OTHER_BUYER = '00000000-0000-4000-8000-0000000000b2';
const SECRET = 'pm_1SecretStripePaymentMethodXk2c';
const CUSTOMER = 'cus_Q2x7Customer';

const updater = (tenantId = TENANT): RequestOrigin => ({
  actor: { ...principal(tenantId), permissions: ['orchestration:buyers:update'] },
});
const entry = (extra: Partial<ConnectionTokenEntryDto> = {}): ConnectionTokenEntryDto => ({
  connection_id: CONNECTION,
  token: SECRET,
  connection_customer: CUSTOMER,
  network_transaction_id: '123456789012345',
  ...extra,
});
const fieldsOf = (error: unknown) => Object.keys((error as { errors?: object }).errors ?? {});

useTransactionsDatabase();

/**
 * Processors' tokens on stored cards (docs/buyers.md, "Connection tokens") on the real repositories
 * (PGlite): sealed at rest, answered masked, checked against the tenant's connections and their rails,
 * replaced by `set` and added to by `record` (the import job's), gone with their card.
 */
describe('ConnectionTokensService (real repositories on PGlite)', () => {
  beforeEach(async () => {
    await setup();
    await addBuyer(TENANT, BUYER);
    await storeCard(TENANT, BUYER, TOKEN);
  });

  it('stores the token sealed, answers the stored card with it masked, audits without it', async () => {
    const s = await setup({ keep: true });
    const card = await s.connectionTokens.set(updater(), BUYER, TOKEN, { connection_tokens: [entry()] });
    expect(card).toMatchObject({
      id: TOKEN,
      buyer_id: BUYER,
      connection_tokens: [
        {
          connection_id: CONNECTION,
          token: '****Xk2c',
          connection_customer: CUSTOMER,
          network_transaction_id: '123456789012345',
        },
      ],
    });
    expect(JSON.stringify(card)).not.toContain(SECRET);
    const [row] = await tableRows('buyer_connection_tokens');
    expect(row).toMatchObject({ tenant_id: TENANT, token_id: TOKEN, token_last4: 'Xk2c' });
    expect((row.sealed_token as Buffer).toString('latin1')).not.toContain('SecretStripe');
    expect(await audit()).toEqual(['Connection tokens set: 1']);
    expect(JSON.stringify(await tableRows('audit_logs'))).not.toContain(SECRET);
    expect(await s.connectionTokens.forPayment(TENANT, TOKEN)).toEqual([
      {
        connectionId: CONNECTION,
        token: SECRET,
        customer: CUSTOMER,
        networkTransactionId: '123456789012345',
      },
    ]);
  });

  it('set replaces the whole list; record adds to it, replacing the token at the same connection', async () => {
    const s = await setup({ keep: true });
    const second = candidateId(1);
    await s.connectionTokens.set(updater(), BUYER, TOKEN, {
      connection_tokens: [entry(), entry({ connection_id: second, token: 'pm_SecondToken0001' })],
    });
    expect(await count('buyer_connection_tokens')).toBe(2);
    await s.connectionTokens.set(updater(), BUYER, TOKEN, {
      connection_tokens: [entry({ connection_id: second })],
    });
    expect((await s.connectionTokens.forPayment(TENANT, TOKEN)).map((t) => t.connectionId)).toEqual([second]);
    await s.work.transaction({}, (change) =>
      s.connectionTokens.record(change, TENANT, TOKEN, [entry({ token: 'pm_ImportedToken0002' })]),
    );
    expect(
      (await s.connectionTokens.forPayment(TENANT, TOKEN)).map((t) => [t.connectionId, t.token]).sort(),
    ).toEqual(
      [
        [CONNECTION, 'pm_ImportedToken0002'],
        [second, SECRET],
      ].sort(),
    );
    await s.connectionTokens.set(updater(), BUYER, TOKEN, { connection_tokens: [] });
    expect(await count('buyer_connection_tokens')).toBe(0);
  });

  it('refuses, naming each field: a connection not the tenant’s or given twice, a token or customer not of its rail', async () => {
    const s = await setup({ keep: true });
    const error = await refusedWith(
      s.connectionTokens.set(updater(), BUYER, TOKEN, {
        connection_tokens: [
          entry({ connection_id: '00000000-0000-4000-8000-0000000000f9' }),
          entry({ token: 'tok_not_a_payment_method' }),
          entry({ connection_id: candidateId(1), connection_customer: undefined }),
          entry({ connection_id: candidateId(1).toUpperCase() }),
        ],
      }),
    );
    expect(fieldsOf(error).sort()).toEqual([
      'connection_tokens[0].connection_id',
      'connection_tokens[1].token',
      'connection_tokens[2].connection_customer',
      'connection_tokens[3].connection_id',
    ]);
    expect(JSON.stringify(error)).not.toContain('tok_not_a_payment_method');
    // The import job's call names them the same way, and writes nothing either.
    expect(
      fieldsOf(
        await refusedWith(
          s.work.transaction({}, (change) =>
            s.connectionTokens.record(change, TENANT, TOKEN, [entry({ connection_id: 'not-a-uuid' })]),
          ),
        ),
      ),
    ).toEqual(['connection_tokens[0].connection_id']);
    expect(
      fieldsOf(
        await refusedWith(
          s.work.transaction({}, (change) =>
            s.connectionTokens.record(change, TENANT, 'not-stored', [entry()]),
          ),
        ),
      ),
    ).toEqual(['payment_method_id']);
    expect(await count('buyer_connection_tokens')).toBe(0);
  });

  it("another tenant's buyer, a card of another buyer and one not stored are not found", async () => {
    const s = await setup({ keep: true });
    await addBuyer(TENANT, OTHER_BUYER);
    await addBuyer(OTHER, BUYER);
    const body = { connection_tokens: [entry()] };
    for (const [origin, buyer, card] of [
      [updater(OTHER), BUYER, TOKEN],
      [updater(), OTHER_BUYER, TOKEN],
      [updater(), BUYER, 'unknown-token'],
    ] as const)
      expect(await refusedWith(s.connectionTokens.set(origin, buyer, card, body))).toMatchObject({
        kind: 'not_found',
      });
    expect(await count('buyer_connection_tokens')).toBe(0);
  });

  it('goes with its stored card (removed from the buyer, or the buyer deleted)', async () => {
    const s = await setup({ keep: true });
    await s.connectionTokens.set(updater(), BUYER, TOKEN, { connection_tokens: [entry()] });
    await s.work.transaction({}, (change) => change.query('DELETE FROM buyers WHERE id = $1', [BUYER]));
    expect(await count('buyer_connection_tokens')).toBe(0);
  });
});
