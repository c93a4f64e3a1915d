import {
  approved,
  body,
  OTHER,
  origin,
  principal,
  refusedWith,
  setup,
  TENANT,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import { OrchestrationErrorCode } from '../orchestration.errors';
import { ProcessorUnreachable } from '../processors/processor-calls';

useTransactionsDatabase();

const PAGE = { page: 1, size: 20 };

/**
 * The read side of transactions on the real repositories (transactions-fixture): one transaction, pages
 * with their filters, refunds and attempts, each only of the caller's tenant, and the card's fingerprint
 * shown only to a caller who may read the token.
 */
describe('TransactionQueriesService (real repositories on PGlite)', () => {
  it("answers one transaction as the API returns it; another tenant's is a 404", async () => {
    const s = await setup();
    const tx = await s.creation.create(origin(), body({ external_identifier: 'order-1' }));
    expect(await s.queries.get(principal(TENANT), tx.id)).toEqual(tx);
    expect(await refusedWith(s.queries.get(principal(OTHER), tx.id))).toMatchObject({
      code: OrchestrationErrorCode.NotFound,
    });
  });

  it("pages the tenant's transactions, filtered by status, connection and external identifier", async () => {
    const s = await setup();
    const ok = await s.creation.create(origin(), body({ external_identifier: 'a' }));
    s.processor.authorize.mockResolvedValueOnce({
      ...approved(),
      outcome: 'declined',
      errorCode: 'declined',
    });
    const declined = await s.creation.create(origin(), body({ external_identifier: 'b' }));
    const ids = async (query: object) =>
      (await s.queries.list(principal(TENANT), { ...PAGE, ...query })).data.map((t) => t.id).sort();
    expect(await ids({})).toEqual([ok.id, declined.id].sort());
    expect(await ids({ status: 'authorization_declined' })).toEqual([declined.id]);
    expect(await ids({ external_identifier: 'a' })).toEqual([ok.id]);
    expect(await ids({ connection_id: ok.connection!.id })).toHaveLength(2);
    const page = await s.queries.list(principal(TENANT), { page: 2, size: 1 });
    expect(page.pagination).toMatchObject({ total_items: 2, total_pages: 2 });
    expect((await s.queries.list(principal(OTHER), PAGE)).data).toEqual([]);
  });

  it('shows the fingerprint only to a caller who may read the token', async () => {
    const s = await setup();
    const tx = await s.creation.create(origin(), body());
    expect((await s.queries.get(principal(TENANT), tx.id)).payment_method).toHaveProperty('fingerprint');
    (s.tokens.readableTokens as jest.Mock).mockResolvedValueOnce(new Set());
    expect((await s.queries.get(principal(TENANT), tx.id)).payment_method).not.toHaveProperty('fingerprint');
  });

  it("lists a transaction's refunds and attempts, in order; for another tenant a 404", async () => {
    const s = await setup({ candidates: 2 });
    s.candidateProcessors[0].authorize.mockRejectedValueOnce(new ProcessorUnreachable('refused'));
    s.candidateProcessors[1].authorize.mockResolvedValueOnce(approved(true));
    const tx = await s.creation.create(origin(), body({ connection_id: undefined, intent: 'capture' }));
    const refund = await s.service.refund(origin(), tx.id, 100);
    expect((await s.queries.listAttempts(principal(TENANT), tx.id)).map((a) => a.status)).toEqual([
      'failed',
      'succeeded',
    ]);
    expect((await s.queries.listRefunds(principal(TENANT), tx.id, PAGE)).data).toEqual([refund]);
    for (const call of [
      s.queries.listAttempts(principal(OTHER), tx.id),
      s.queries.listRefunds(principal(OTHER), tx.id, PAGE),
    ])
      expect(await refusedWith(call)).toMatchObject({ code: OrchestrationErrorCode.NotFound });
  });
});
