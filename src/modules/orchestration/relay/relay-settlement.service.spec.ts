import { ProcessorUnavailable } from '../processors/processor-calls';
import { toReconciliationId } from '../processors/reconciliation';
import { STUCK_AFTER_MS } from '../transactions/transactions.service';
import {
  ADYEN,
  audit,
  body,
  events,
  OTHER,
  setup,
  TENANT,
  useRelayDatabase,
  who,
} from '../../../../test/support/relay-fixture';

useRelayDatabase();

describe('RelaySettlementService: the sweep of relay refunds left processing (real repositories on PGlite)', () => {
  it('the settlement sweep asks the vendor about a refund left processing, once it is stuck, and settles it once', async () => {
    const s = setup();
    s.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const made = await s.service.create({ actor: who() }, body());
    s.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 're_9' });
    expect(await s.settlement.settle()).toBe(0);
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    expect(await s.settlement.settle()).toBe(1);
    expect(await s.settlement.settle()).toBe(0);
    expect(s.pollStatus).toHaveBeenCalledTimes(1);
    expect(s.pollStatus.mock.calls[0][0]).toMatchObject({
      operation: 'refund',
      refundId: made.id,
      connectionTransactionId: 'pi_3OldPayment',
      reconciliationId: toReconciliationId(made.id),
    });
    expect(await s.service.get(who(), made.id)).toMatchObject({
      status: 'succeeded',
      vendor_refund_id: 're_9',
    });
    const last = (await audit()).at(-1)!;
    expect(last).toMatchObject({ actor_type: 'system', message: 'Settled by asking the vendor: succeeded' });
    expect((await events()).at(-1)).toEqual(['relay:refund:succeeded', 'succeeded']);
  });

  it("a pass over one tenant's relay refunds leaves every other tenant's alone", async () => {
    const s = setup();
    s.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const made = await s.service.create({ actor: who() }, body());
    s.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 're_9' });
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    expect(await s.settlement.settle(OTHER)).toBe(0);
    expect(s.pollStatus).not.toHaveBeenCalled();
    expect(await s.settlement.settle(TENANT)).toBe(1);
    expect(await s.service.get(who(), made.id)).toMatchObject({ status: 'succeeded' });
  });

  it('a refund the vendor never received is failed by the sweep (unknown_to_vendor)', async () => {
    const s = setup();
    s.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const made = await s.service.create({ actor: who() }, body());
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    expect(await s.settlement.settle()).toBe(1);
    expect(await s.service.get(who(), made.id)).toMatchObject({
      status: 'failed',
      error_code: 'unknown_to_vendor',
    });
  });

  it('at a vendor that confirms by notification, waits for it until VENDOR_NOTIFICATION_TIMEOUT_SECONDS', async () => {
    const s = setup();
    s.refund.mockResolvedValueOnce({ status: 'pending', vendorId: 'PSP1' });
    const made = await s.service.create(
      { actor: who() },
      body({ connection_id: ADYEN, vendor_payment_id: 'ABCDEFGHIJKLMNOP' }),
    );
    expect(made.status).toBe('processing');
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    expect(await s.settlement.settle()).toBe(0);
    expect(s.pollStatus).not.toHaveBeenCalled();
    s.clock.advance(600_000);
    s.pollStatus.mockResolvedValueOnce({ status: 'failed', errorCode: 'notification_timeout' });
    expect(await s.settlement.settle()).toBe(1);
    expect(await s.service.get(who(), made.id)).toMatchObject({
      status: 'failed',
      error_code: 'notification_timeout',
      vendor_refund_id: 'PSP1',
    });
    expect((await events()).at(-1)).toEqual(['relay:refund:failed', 'failed']);
  });
});
