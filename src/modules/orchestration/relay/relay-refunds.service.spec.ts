import { ValidationException } from '../../../common/errors/domain.exception';
import { OrchestrationErrorCode } from '../orchestration.errors';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { toReconciliationId } from '../processors/reconciliation';
import {
  audit,
  body,
  CONNECTION,
  events,
  FAILED,
  OTHER,
  refusedWith,
  relayDatabase,
  setup,
  useRelayDatabase,
  who,
} from '../../../../test/support/relay-fixture';

useRelayDatabase();

describe('RelayRefundsService (real repositories on PGlite, fake processor)', () => {
  it('records the refund processing, then asks the vendor with keys derived from its id, then records the answer', async () => {
    const s = setup();
    const made = await s.service.create({ actor: who() }, body());
    expect(made).toMatchObject({
      type: 'relay_refund',
      connection_id: CONNECTION,
      vendor_payment_id: 'pi_3OldPayment',
      amount: 700,
      currency: 'USD',
      reason: 'requested_by_customer',
      status: 'succeeded',
      vendor_refund_id: 're_1',
      error_code: null,
    });
    expect(s.refund).toHaveBeenCalledTimes(1);
    expect(s.refund.mock.calls[0][0]).toMatchObject({
      connectionTransactionId: 'pi_3OldPayment',
      reconciliationId: toReconciliationId(made.id),
      refundId: made.id,
      amount: 700,
      currency: 'USD',
      reason: 'requested_by_customer',
      credentials: { secret_key: 'sk_test_1' },
    });
    expect(await events()).toEqual([
      ['relay:refund:created', 'processing'],
      ['relay:refund:succeeded', 'succeeded'],
    ]);
    expect(await audit()).toEqual([
      expect.objectContaining({
        entity_type: 'relay_refund',
        entity_id: made.id,
        operation: 'create',
        message: `Relay refund of 700 USD of vendor payment pi_3OldPayment at connection ${CONNECTION}: processing`,
      }),
      expect.objectContaining({
        entity_type: 'relay_refund',
        operation: 'update',
        message: 'Vendor answered the relay refund: succeeded',
      }),
    ]);
    expect(await s.service.get(who(), made.id)).toEqual(made);
  });

  it('a refund the vendor refuses is failed with its code, and relay:refund:failed', async () => {
    const s = setup();
    s.refund.mockResolvedValueOnce({ status: 'failed', errorCode: 'charge_already_refunded' });
    const made = await s.service.create({ actor: who() }, body());
    expect(made).toMatchObject({
      status: 'failed',
      error_code: 'charge_already_refunded',
      vendor_refund_id: null,
    });
    expect((await events()).at(-1)).toEqual(['relay:refund:failed', 'failed']);
    expect((await audit()).at(-1)!.message).toBe(
      'Vendor answered the relay refund: failed (charge_already_refunded)',
    );
  });

  it('a pending answer keeps it processing with the vendor refund id: no outcome event yet', async () => {
    const s = setup();
    s.refund.mockResolvedValueOnce({ status: 'pending', vendorId: 'PSP1' });
    const made = await s.service.create({ actor: who() }, body());
    expect(made).toMatchObject({ status: 'processing', vendor_refund_id: 'PSP1' });
    expect(await events()).toEqual([['relay:refund:created', 'processing']]);
  });

  it('refuses, naming the field, a connection not of the tenant, not available, or a payment id not of its vendor; nothing is recorded', async () => {
    const s = setup();
    const refusals = [
      [body({ connection_id: '00000000-0000-4000-8000-0000000001c9' }), 'connection_id'],
      [body({ connection_id: FAILED }), 'connection_id'],
      [body({ vendor_payment_id: 'pay_abc' }), 'vendor_payment_id'],
    ] as const;
    for (const [request, field] of refusals) {
      const error = await refusedWith(s.service.create({ actor: who() }, request));
      expect(error).toBeInstanceOf(ValidationException);
      expect(Object.keys((error as ValidationException).errors!)).toEqual([field]);
    }
    // Another tenant cannot use the tenant's connection.
    const other = await refusedWith(s.service.create({ actor: who(OTHER) }, body()));
    expect((other as ValidationException).errors).toEqual({ connection_id: ['no such connection'] });
    expect(s.refund).not.toHaveBeenCalled();
    expect(await relayDatabase().rows('SELECT id FROM relay_refunds')).toEqual([]);
  });

  it('another tenant neither gets nor lists the refund', async () => {
    const s = setup();
    const made = await s.service.create({ actor: who() }, body());
    expect(await refusedWith(s.service.get(who(OTHER), made.id))).toMatchObject({
      code: OrchestrationErrorCode.NotFound,
    });
    expect((await s.service.list(who(OTHER), { page: 1, size: 20 })).data).toEqual([]);
    const mine = await s.service.list(who(), { page: 1, size: 20 });
    expect(mine.pagination.total_items).toBe(1);
    expect(mine.data).toEqual([made]);
  });

  it('a retry of a request that died after recording its refund answers that refund and calls the vendor no more', async () => {
    const s = setup();
    // The first run: recorded and pinned, then the process died during the vendor call.
    const first = await relayDatabase().claim(who(), 'relay-key-1', body());
    s.refund.mockRejectedValueOnce(new ProcessorUnavailable('killed'));
    const interrupted = await s.service.create({ actor: who(), idempotency: first }, body());
    expect(interrupted.status).toBe('processing');
    expect(s.refund).toHaveBeenCalledTimes(1);
    // The retry took the stale claim over: its `resumed` is the refund pinned.
    const retried = await s.service.create(
      {
        actor: who(),
        idempotency: Object.assign(Object.create(first) as typeof first, { resumed: interrupted.id }),
      },
      body(),
    );
    expect(retried).toEqual(interrupted);
    expect(s.refund).toHaveBeenCalledTimes(1);
    expect(await relayDatabase().rows('SELECT id FROM relay_refunds')).toEqual([{ id: interrupted.id }]);
  });
});
