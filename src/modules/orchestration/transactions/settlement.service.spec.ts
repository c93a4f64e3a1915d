import {
  approved,
  audit,
  auditRows,
  body,
  CONNECTION,
  origin,
  OTHER,
  setEnvironment,
  setup,
  TENANT,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { STUCK_AFTER_MS } from './transactions.service';

useTransactionsDatabase();

/** The fixture's notification timeout (VENDOR_NOTIFICATION_TIMEOUT_SECONDS). */
const NOTIFICATION_TIMEOUT_MS = 600_000;

/**
 * The settlement job on the real repositories (transactions-fixture): which transactions and refunds
 * its query picks (stuck ones, pending asynchronous operations, and at a vendor that notifies, only once
 * the notification is overdue), what it writes for each (a change of the tenant's, audited as the
 * system), and that one transaction it cannot settle does not stop the others.
 */
describe('SettlementService (real repositories on PGlite, fake processor)', () => {
  afterEach(() => setEnvironment(CONNECTION, 'sandbox'));

  it('leaves a stuck authorization at a vendor that notifies to its notification until that is overdue', async () => {
    const s = await setup();
    (s.processors as unknown as { notificationFormulas: () => string[] }).notificationFormulas = () => [
      'stripe-card',
    ];
    await setEnvironment(CONNECTION, 'test');
    s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const tx = await s.creation.create(origin(), body());
    s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_1' });
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    expect(await s.settlement.settle()).toBe(0);
    expect(s.processor.pollStatus).not.toHaveBeenCalled();
    s.clock.advance(NOTIFICATION_TIMEOUT_MS);
    expect(await s.settlement.settle()).toBe(1);
    expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({ status: 'authorization_succeeded' });
  });

  it('settles a sandbox connection as soon as the transaction is stuck, whatever the vendor notifies', async () => {
    const s = await setup();
    (s.processors as unknown as { notificationFormulas: () => string[] }).notificationFormulas = () => [
      'stripe-card',
    ];
    s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    await s.creation.create(origin(), body());
    s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_1' });
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    expect(await s.settlement.settle()).toBe(1);
  });

  it("a pass over one tenant's operations leaves every other tenant's alone", async () => {
    const s = await setup();
    s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const tx = await s.creation.create(origin(), body());
    s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_1' });
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    expect(await s.settlement.settle(OTHER)).toBe(0);
    expect(s.processor.pollStatus).not.toHaveBeenCalled();
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('processing');
    expect(await s.settlement.settle(TENANT)).toBe(1);
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('authorization_succeeded');
  });

  it('one transaction it cannot settle (its vendor fails the poll) leaves it as it was and the others go on', async () => {
    const s = await setup();
    s.processor.authorize.mockRejectedValue(new ProcessorUnavailable('timeout'));
    const first = await s.creation.create(origin(), body());
    s.clock.advance(1);
    const second = await s.creation.create(origin(), body());
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    s.processor.pollStatus
      .mockRejectedValueOnce(new Error('vendor down'))
      .mockResolvedValueOnce({ status: 'succeeded', vendorId: 'pi_2' });
    expect(await s.settlement.settle()).toBe(1);
    expect((await s.transactions.find(TENANT, first.id))!.status).toBe('processing');
    expect((await s.transactions.find(TENANT, second.id))!.status).toBe('authorization_succeeded');
    expect((await auditRows()).filter((row) => row.actor_type === 'system')).toEqual([
      expect.objectContaining({
        entity_id: second.id,
        message: 'Settled authorize (succeeded): authorization_succeeded',
      }),
    ]);
  });

  it('a refund the vendor failed is settled failed: the refunded amount stays', async () => {
    const s = await setup();
    s.processor.authorize.mockResolvedValueOnce(approved(true));
    const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
    s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const refund = await s.service.refund(origin(), tx.id, 500);
    s.clock.advance(STUCK_AFTER_MS + 1_000);
    s.processor.pollStatus.mockResolvedValue({ status: 'failed', errorCode: 'refund_failed' });
    expect(await s.settlement.settle()).toBe(1);
    expect(await s.settlement.settle()).toBe(0);
    expect((await audit()).at(-1)).toBe(`Refund ${refund.id} settled: failed`);
    expect((await s.transactions.find(TENANT, tx.id))!.refunded_amount).toBe('0');
    expect(await s.refunds.find(TENANT, tx.id, refund.id)).toMatchObject({ status: 'failed' });
  });

  it('a pending capture the vendor has not finished stays pending, polled again on the next pass', async () => {
    const s = await setup();
    const tx = await s.creation.create(origin(), body());
    s.processor.capture.mockResolvedValueOnce({ status: 'pending' });
    await s.service.capture(origin(), tx.id);
    s.processor.pollStatus.mockResolvedValue({ status: 'pending' });
    expect(await s.settlement.settle()).toBe(0);
    expect(await s.settlement.settle()).toBe(0);
    expect(s.processor.pollStatus).toHaveBeenCalledTimes(2);
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('capture_pending');
  });
});
