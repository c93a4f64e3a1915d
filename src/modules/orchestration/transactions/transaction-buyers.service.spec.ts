import {
  addBuyer,
  approved,
  body,
  count,
  OTHER,
  origin,
  principal,
  refusedWith,
  setup,
  storeCard,
  storedCards,
  TENANT,
  TOKEN,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { ProcessorUnavailable } from '../processors/processor-calls';

const BUYER = '00000000-0000-4000-8000-0000000000b1';
const OTHER_BUYER = '00000000-0000-4000-8000-0000000000b2';

/** A caller that may name buyers (`orchestration:buyers:read`). */
const buyerReader = (): RequestOrigin => ({
  actor: { ...principal(TENANT), permissions: ['orchestration:buyers:read', 'orchestration:buyers:update'] },
});

const fieldsOf = (error: unknown) => Object.keys((error as { errors?: object }).errors ?? {});

useTransactionsDatabase();

/** The stored card of TOKEN, as the database holds it. */
const storedToken = async () => (await storedCards()).find((card) => card.token_id === TOKEN);

/**
 * Transactions with buyers (docs/buyers.md), on the real repositories of transactions-fixture: which card
 * a buyer's payment charges, when a card is stored and marked used, and what is refused before anything
 * is created.
 */
describe('TransactionCreationService: buyers (real repositories on PGlite)', () => {
  it("buyer_id alone charges the buyer's first stored card as card_on_file, shows the buyer and marks the card used", async () => {
    const s = await setup();
    await addBuyer(TENANT, BUYER, 'customer-1');
    await storeCard(TENANT, BUYER, TOKEN);
    s.processor.authorize.mockResolvedValue(approved());
    const tx = await s.creation.create(buyerReader(), body({ token: undefined, buyer_id: BUYER }));
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      payment_source: 'card_on_file',
      payment_method: { id: TOKEN },
      buyer: { id: BUYER, external_identifier: 'customer-1', display_name: null },
    });
    expect(s.processor.authorize.mock.calls[0][0]).toMatchObject({ paymentSource: 'card_on_file' });
    expect((await storedToken())?.last_used_at).toBeInstanceOf(Date);
  });

  it('store: true stores the card once the authorization succeeds, even when settlement finds that out', async () => {
    const s = await setup();
    await addBuyer(TENANT, BUYER);
    s.processor.authorize.mockRejectedValue(new ProcessorUnavailable('502'));
    const tx = await s.creation.create(buyerReader(), body({ buyer_id: BUYER, store: true }));
    expect(tx.status).toBe('processing');
    expect(await count('buyer_payment_methods')).toBe(0);
    s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_found' });
    s.clock.advance(120_000);
    await s.settlement.settle();
    expect(await storedToken()).toMatchObject({ buyer_id: BUYER, last_used_at: expect.any(Date) });
  });

  it('a declined authorization stores nothing', async () => {
    const s = await setup();
    await addBuyer(TENANT, BUYER);
    s.processor.authorize.mockResolvedValue({ ...approved(), outcome: 'declined', errorCode: 'declined' });
    const tx = await s.creation.create(buyerReader(), body({ buyer_id: BUYER, store: true }));
    expect(tx.status).toBe('authorization_declined');
    expect(await count('buyer_payment_methods')).toBe(0);
  });

  it('refuses before anything is created: no buyers:read, an unknown buyer, a card not stored, no card, store alone', async () => {
    const s = await setup();
    await addBuyer(TENANT, BUYER);
    await addBuyer(TENANT, OTHER_BUYER);
    expect(await refusedWith(s.creation.create(origin(), body({ buyer_id: BUYER })))).toMatchObject({
      status: 403,
    });
    const cases: [Parameters<typeof body>[0], string][] = [
      [{ buyer_id: '00000000-0000-4000-8000-0000000000b9' }, 'buyer_id'],
      [{ buyer_id: BUYER }, 'token'],
      [{ buyer_id: BUYER, token: undefined }, 'token'],
      [{ store: true }, 'store'],
      [{ token: undefined }, 'token'],
    ];
    for (const [extra, field] of cases)
      expect(fieldsOf(await refusedWith(s.creation.create(buyerReader(), body(extra))))).toContain(field);
    // A token stored for another buyer: not this buyer's (400), and storing it for this one a conflict.
    await storeCard(TENANT, OTHER_BUYER, TOKEN);
    expect(fieldsOf(await refusedWith(s.creation.create(buyerReader(), body({ buyer_id: BUYER }))))).toEqual([
      'token',
    ]);
    expect(
      await refusedWith(s.creation.create(buyerReader(), body({ buyer_id: BUYER, store: true }))),
    ).toMatchObject({ kind: 'conflict' });
    expect(await count('transactions')).toBe(0);
    expect(await storedCards()).toEqual([
      expect.objectContaining({ buyer_id: OTHER_BUYER, last_used_at: null }),
    ]);
    expect(s.processor.authorize).not.toHaveBeenCalled();
  });

  it("another tenant's buyer is unknown", async () => {
    const s = await setup();
    await addBuyer(OTHER, BUYER);
    expect(fieldsOf(await refusedWith(s.creation.create(buyerReader(), body({ buyer_id: BUYER }))))).toEqual([
      'buyer_id',
    ]);
  });
});
