import { ValidationException } from '../../../common/errors/domain.exception';
import { OrchestrationErrorCode } from '../orchestration.errors';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { STUCK_AFTER_MS } from './transactions.service';
import {
  TENANT,
  approved,
  setup,
  Setup,
  origin,
  body,
  audit,
  auditRows,
  count,
  events,
  lastEvent,
  refusedWith,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';

useTransactionsDatabase();

describe('TransactionsService: capture, void and refund (real repositories on PGlite, fake processor)', () => {
  describe('capture, void, refund', () => {
    /** An authorized transaction, and the count of audit rows and events its creation wrote. */
    async function authorized(s: Setup) {
      const tx = await s.creation.create(origin(), body());
      return { tx, audited: (await audit()).length, evented: (await events()).length };
    }

    it('captures in full: the transaction held processing while the vendor is asked, then its outcome', async () => {
      const s = await setup();
      const { tx, audited, evented } = await authorized(s);
      const captured = await s.service.capture(origin(), tx.id);
      expect(captured).toMatchObject({ status: 'capture_succeeded', captured_amount: 1200 });
      expect(s.processor.capture.mock.calls[0][0]).toMatchObject({ amount: 1200, currency: 'USD' });
      expect((await events()).slice(evented)).toEqual([
        ['transaction:updated', 'processing'],
        ['transaction:updated', 'capture_succeeded'],
      ]);
      expect((await auditRows()).slice(audited)).toEqual([
        expect.objectContaining({
          entity_type: 'transaction',
          entity_id: tx.id,
          operation: 'update',
          message: 'Transaction capture of 1200 USD: succeeded',
        }),
      ]);
    });

    it('refuses a capture past the authorized amount, and any capture of a transaction not authorized', async () => {
      const s = await setup();
      const { tx, evented } = await authorized(s);
      expect(await refusedWith(s.service.capture(origin(), tx.id, 5000))).toBeInstanceOf(ValidationException);
      expect(await events()).toHaveLength(evented);
      expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({
        status: 'authorization_succeeded',
        captured_amount: '0',
      });
      s.processor.authorize.mockResolvedValueOnce({
        ...approved(),
        outcome: 'declined',
        errorCode: 'declined',
      });
      const declined = await s.creation.create(origin(), body());
      const error = await refusedWith(s.service.capture(origin(), declined.id));
      expect(error).toMatchObject({ code: OrchestrationErrorCode.Conflict });
      expect(s.processor.capture).not.toHaveBeenCalled();
    });

    it('an asynchronous capture goes capture_pending and the job settles it when the vendor has', async () => {
      const s = await setup();
      const { tx } = await authorized(s);
      s.processor.capture.mockResolvedValueOnce({ status: 'pending' });
      expect((await s.service.capture(origin(), tx.id, 700)).status).toBe('capture_pending');
      s.processor.pollStatus.mockResolvedValueOnce({ status: 'pending' });
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(5_000);
      s.processor.pollStatus.mockResolvedValueOnce({ status: 'succeeded' });
      expect(await s.settlement.settle()).toBe(1);
      expect(s.processor.pollStatus.mock.calls.at(-1)![0]).toMatchObject({
        operation: 'capture',
        amount: 700,
      });
      expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: '700',
      });
      expect((await audit()).at(-1)).toBe('Settled capture (succeeded): capture_succeeded');
    });

    it('voids an authorization; the void needs the token usable by the caller', async () => {
      const s = await setup();
      const { tx, audited } = await authorized(s);
      const voided = await s.service.void(origin(), tx.id);
      expect(voided.status).toBe('authorization_voided');
      expect((await audit()).slice(audited)).toEqual(['Transaction void: succeeded']);
      const { tx: other } = await authorized(s);
      s.loadForUse.mockResolvedValueOnce(undefined);
      expect(await refusedWith(s.service.void(origin(), other.id))).toMatchObject({
        code: OrchestrationErrorCode.NotFound,
      });
      expect(s.processor.void).toHaveBeenCalledTimes(1);
      expect((await s.transactions.find(TENANT, other.id))!.status).toBe('authorization_succeeded');
    });

    it('refunds what is left of the captured amount, once; a pending refund counts as taken', async () => {
      const s = await setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      const audited = (await audit()).length;
      s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const pending = await s.service.refund(origin(), tx.id, 200);
      expect(pending).toMatchObject({ status: 'processing', amount: 200 });
      const rest = await s.service.refund(origin(), tx.id);
      expect(rest).toMatchObject({ status: 'succeeded', amount: 1000 });
      expect((await audit()).slice(audited)).toEqual([`Refund ${rest.id} of 1000 USD: succeeded`]);
      expect(await refusedWith(s.service.refund(origin(), tx.id, 1))).toMatchObject({
        code: OrchestrationErrorCode.Conflict,
        detail: 'The transaction has been refunded in full.',
      });
      expect((await s.transactions.find(TENANT, tx.id))!.refunded_amount).toBe('1000');
      expect(await count('refunds')).toBe(2);
    });

    it('the job settles an unanswered refund once it is stuck, adding it to the refunded amount', async () => {
      const s = await setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const refund = await s.service.refund(origin(), tx.id, 300);
      s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 're_1' });
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      expect(await s.settlement.settle()).toBe(1);
      expect(await s.settlement.settle()).toBe(0);
      expect(s.processor.pollStatus.mock.calls[0][0]).toMatchObject({
        operation: 'refund',
        refundId: refund.id,
      });
      expect((await audit()).at(-1)).toBe(`Refund ${refund.id} settled: succeeded`);
      expect(await lastEvent()).toMatchObject({
        type: 'transaction:updated',
        data: { refunded_amount: 300 },
      });
      expect((await s.transactions.find(TENANT, tx.id))!.refunded_amount).toBe('300');
    });
  });
});
