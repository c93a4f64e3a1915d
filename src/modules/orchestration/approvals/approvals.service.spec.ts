import {
  approved,
  auditRows,
  body,
  events,
  origin,
  setup,
  TENANT,
  type Setup,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { approvalDigest } from '../transactions/approval-links';
import { ApprovalsService } from './approvals.service';

useTransactionsDatabase();

/** The link's token the buyer opens (its digest is what the database keeps). */
const TOKEN_OF_LINK = 'buyer-approval-link-token';

/**
 * Buyer approvals on the real repositories (transactions-fixture): a sandbox challenge found by its
 * link's digest, decided once by the buyer (audited as the buyer), an expired or used link, and a vendor
 * that does not answer leaving the transaction to settlement.
 */
async function challenged(s: Setup) {
  s.issue.mockImplementationOnce((_tenantId: string, _id: string, createdAt: Date) =>
    Promise.resolve({
      tokenDigest: Buffer.from(approvalDigest(TOKEN_OF_LINK)),
      sealedToken: Buffer.from('sealed'),
      expiresAt: new Date(createdAt.getTime() + 15 * 60_000),
      sealedVendorAction: null,
    }),
  );
  s.processor.authorize.mockResolvedValueOnce({ ...approved(), outcome: 'challenge' });
  const tx = await s.creation.create(origin(), body());
  const approvals = new ApprovalsService(
    s.transactions,
    s.journal,
    s.connections,
    s.processors,
    s.links,
    s.clock,
    s.work,
  );
  return { tx, approvals };
}

describe('ApprovalsService (real repositories on PGlite, fake processor)', () => {
  it('finds a pending challenge by its link; an unknown link is unknown', async () => {
    const s = await setup();
    const { tx, approvals } = await challenged(s);
    expect(await approvals.find(TOKEN_OF_LINK)).toMatchObject({ state: 'pending', row: { id: tx.id } });
    expect(await approvals.find('another')).toEqual({ state: 'unknown' });
  });

  it('the buyer approves once: the processor asked, the outcome recorded and audited as the buyer; the link is then used', async () => {
    const s = await setup();
    const { tx, approvals } = await challenged(s);
    s.processor.completeChallenge.mockResolvedValueOnce(approved());
    const decided = await approvals.decide(TOKEN_OF_LINK, true);
    expect(decided).toMatchObject({ outcome: 'approved', row: { status: 'authorization_succeeded' } });
    expect(s.processor.completeChallenge.mock.calls[0][0]).toMatchObject({ approved: true });
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('authorization_succeeded');
    expect((await auditRows()).at(-1)).toMatchObject({
      actor_type: 'buyer',
      actor_id: null,
      message: 'Buyer approved the payment on the approval page: authorization_succeeded',
    });
    expect((await events(tx.id)).map(([, status]) => status)).toEqual([
      'processing',
      'buyer_approval_pending',
      'processing',
      'authorization_succeeded',
    ]);
    expect(await approvals.decide(TOKEN_OF_LINK, true)).toMatchObject({ outcome: 'used' });
    expect(s.processor.completeChallenge).toHaveBeenCalledTimes(1);
  });

  it('a declined challenge is declined', async () => {
    const s = await setup();
    const { approvals } = await challenged(s);
    s.processor.completeChallenge.mockResolvedValueOnce({
      ...approved(),
      outcome: 'declined',
      errorCode: 'three_d_secure_failed',
    });
    expect(await approvals.decide(TOKEN_OF_LINK, false)).toMatchObject({
      outcome: 'declined',
      row: { status: 'authorization_declined' },
    });
    expect((await auditRows()).at(-1)!.message).toBe(
      'Buyer declined the payment on the approval page: authorization_declined',
    );
  });

  it('a link past its expiry expires the transaction instead of asking the processor', async () => {
    const s = await setup();
    const { tx, approvals } = await challenged(s);
    s.clock.advance(15 * 60_000 + 1_000);
    expect(await approvals.find(TOKEN_OF_LINK)).toMatchObject({ state: 'expired' });
    expect(await approvals.decide(TOKEN_OF_LINK, true)).toMatchObject({ outcome: 'expired' });
    expect(s.processor.completeChallenge).not.toHaveBeenCalled();
    expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({
      status: 'authorization_failed',
      error_code: 'approval_expired',
    });
    expect(await approvals.decide(TOKEN_OF_LINK, true)).toMatchObject({ outcome: 'expired' });
  });

  it('a processor that does not answer leaves the transaction processing, for settlement', async () => {
    const s = await setup();
    const { tx, approvals } = await challenged(s);
    s.processor.completeChallenge.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    expect(await approvals.decide(TOKEN_OF_LINK, true)).toMatchObject({ outcome: 'processing' });
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('processing');
  });
});
