import {
  addBuyer,
  approved,
  body,
  CONNECTION,
  principal,
  setup,
  storeCard,
  TENANT,
  TOKEN,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';

const BUYER = '00000000-0000-4000-8000-0000000000b1';
const PM = 'pm_1MandateAtStripe0001';

const caller = (): RequestOrigin => ({
  actor: {
    ...principal(TENANT),
    permissions: ['orchestration:buyers:read', 'orchestration:buyers:update'],
  },
});
/** A renewal: the buyer's stored card, charged by the merchant. */
const renewal = (extra: Parameters<typeof body>[0] = {}) =>
  body({
    token: undefined,
    buyer_id: BUYER,
    payment_source: 'recurring',
    merchant_initiated: true,
    ...extra,
  });

useTransactionsDatabase();

/**
 * Which attempt sends a processor's token (docs/buyers.md, "Connection tokens"): a merchant-initiated
 * payment with a buyer's stored card, at the connection the token is for; elsewhere the card goes, with
 * the mandate's network transaction id when the request gave none; any other payment the card alone.
 */
describe('TransactionCreationService: processors’ tokens (real repositories on PGlite)', () => {
  beforeEach(async () => {
    await setup();
    await addBuyer(TENANT, BUYER);
    await storeCard(TENANT, BUYER, TOKEN);
  });

  const withToken = async (s: Awaited<ReturnType<typeof setup>>) =>
    s.connectionTokens.set(caller(), BUYER, TOKEN, {
      connection_tokens: [
        {
          connection_id: CONNECTION,
          token: PM,
          connection_customer: 'cus_Mandate01',
          network_transaction_id: '585011223344556',
        },
      ],
    });

  it('a merchant-initiated payment at the token’s connection sends the token and its customer', async () => {
    const s = await setup({ keep: true });
    await withToken(s);
    s.processor.authorize.mockResolvedValue(approved());
    const tx = await s.creation.create(caller(), renewal());
    expect(tx.status).toBe('authorization_succeeded');
    expect(s.processor.authorize.mock.calls[0][0]).toMatchObject({
      connectionToken: { token: PM, customer: 'cus_Mandate01' },
      merchantInitiated: true,
      previousSchemeTransactionId: null,
    });
    // The transaction shows the card, as any: the token is nowhere in its answer.
    expect(JSON.stringify(tx)).not.toContain(PM);
  });

  it('failed over to a connection without a token: the card, with the mandate’s network transaction id', async () => {
    const s = await setup({ keep: true, candidates: 2 });
    await withToken(s);
    s.candidateProcessors[0].authorize.mockResolvedValue({
      ...approved(),
      outcome: 'declined',
      errorCode: 'declined',
    });
    s.candidateProcessors[1].authorize.mockResolvedValue(approved());
    const tx = await s.creation.create(caller(), renewal({ connection_id: undefined }));
    expect(tx.status).toBe('authorization_succeeded');
    expect(s.candidateProcessors[0].authorize.mock.calls[0][0].connectionToken?.token).toBe(PM);
    const second = s.candidateProcessors[1].authorize.mock.calls[0][0];
    expect(second.connectionToken).toBeUndefined();
    expect(second.previousSchemeTransactionId).toBe('585011223344556');
    expect(second.card.number).toBe('4242424242424242');
  });

  it('the request’s own previous_scheme_transaction_id goes elsewhere rather than the mandate’s', async () => {
    const s = await setup({ keep: true, candidates: 2 });
    await withToken(s);
    s.candidateProcessors[0].authorize.mockResolvedValue({
      ...approved(),
      outcome: 'declined',
      errorCode: 'declined',
    });
    await s.creation.create(
      caller(),
      renewal({
        connection_id: undefined,
        is_subsequent_payment: true,
        previous_scheme_transaction_id: '999888777666555',
      }),
    );
    expect(s.candidateProcessors[1].authorize.mock.calls[0][0].previousSchemeTransactionId).toBe(
      '999888777666555',
    );
  });

  it('a customer-initiated payment, an ecommerce one, or one naming no buyer sends the card alone', async () => {
    const s = await setup({ keep: true });
    await withToken(s);
    await s.creation.create(caller(), renewal({ merchant_initiated: false }));
    await s.creation.create(caller(), renewal({ payment_source: 'ecommerce' }));
    await s.creation.create(caller(), body({ merchant_initiated: true, payment_source: 'card_on_file' }));
    for (const [request] of s.processor.authorize.mock.calls) {
      expect(request.connectionToken).toBeUndefined();
      expect(request.previousSchemeTransactionId).toBeNull();
    }
    expect(s.processor.authorize).toHaveBeenCalledTimes(3);
  });
});
