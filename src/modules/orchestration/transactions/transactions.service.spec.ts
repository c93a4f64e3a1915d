import { ValidationException } from '../../../common/errors/domain.exception';
import { OrchestrationErrorCode, OrchestrationException } from '../orchestration.errors';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { STUCK_AFTER_MS } from './transactions.service';
import {
  TENANT,
  OTHER,
  TOKEN,
  principal,
  approved,
  setup,
  origin,
  body,
  claim,
  audit,
  auditRows,
  count,
  events,
  refusedWith,
  transactionIds,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';

useTransactionsDatabase();

/** The statuses of the outbox events a change recorded (kept on the change object once it committed). */
const statusesOf = (change: { events: { type: string; data: object }[] }) =>
  change.events.map((e) => [e.type, (e.data as { status: string }).status]);

describe('TransactionsService with settlement (real repositories on PGlite, fake processor)', () => {
  describe('authorize', () => {
    it('commits the transaction processing, calls the vendor, then commits its outcome with one audit row', async () => {
      const s = await setup();
      const tx = await s.creation.create(origin(), body());
      expect(tx).toMatchObject({
        status: 'authorization_succeeded',
        authorized_amount: 1200,
        intent: 'authorize',
      });
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
      expect(s.processor.authorize.mock.calls[0]).toEqual([
        expect.objectContaining({ amount: 1200, currency: 'USD', cvc: '123' }),
      ]);
      // Two changes: the row before the call, its outcome after.
      expect(await events()).toEqual([
        ['transaction:created', 'processing'],
        ['transaction:updated', 'authorization_succeeded'],
      ]);
      expect(await auditRows()).toEqual([
        {
          tenant_id: TENANT,
          actor_id: principal(TENANT).applicationId,
          actor_type: 'application',
          entity_type: 'transaction',
          entity_id: tx.id,
          operation: 'create',
          message: 'Transaction created: authorization_succeeded',
        },
      ]);
      expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({
        status: 'authorization_succeeded',
        authorized_amount: '1200',
        pending_operation: null,
      });
    });

    it('forgets the CVC in the change that records the outcome; counts each status once committed', async () => {
      const s = await setup();
      await s.creation.create(origin(), body());
      expect(s.forgotten.map((f) => f.tokenId)).toEqual([TOKEN]);
      expect(statusesOf(s.forgotten[0].change)).toEqual([['transaction:updated', 'authorization_succeeded']]);
      expect(s.metrics.transactionEntered.mock.calls).toEqual([['processing'], ['authorization_succeeded']]);
    });

    it('sends no CVC for a merchant-initiated or subsequent card-on-file payment and forgets none', async () => {
      for (const initiation of [
        { merchant_initiated: true },
        { is_subsequent_payment: true, previous_scheme_transaction_id: '123456789012345' },
      ]) {
        const s = await setup();
        await s.creation.create(origin(), body({ payment_source: 'card_on_file', ...initiation }));
        expect(s.processor.authorize.mock.calls[0][0]).not.toHaveProperty('cvc');
        expect(s.forgotten).toEqual([]);
      }
    });

    it('sends the CVC with the first customer-initiated card-on-file or recurring payment, then forgets it', async () => {
      for (const paymentSource of ['card_on_file', 'recurring'] as const) {
        const s = await setup();
        await s.creation.create(origin(), body({ payment_source: paymentSource }));
        expect(s.processor.authorize.mock.calls[0][0]).toHaveProperty('cvc');
        expect(s.forgotten.map((f) => f.tokenId)).toEqual([TOKEN]);
      }
    });

    it('intent capture is captured at once', async () => {
      const s = await setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      expect(tx).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 1200,
        intent_outcome: 'succeeded',
      });
      expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({ captured_amount: '1200' });
    });

    it('refuses bad input by field before any change opens or any vendor is called: the body first, then the connection', async () => {
      const s = await setup();
      const error = await refusedWith(
        s.creation.create(origin(), body({ currency: 'EUR', token: '00000000-0000-4000-8000-0000000000d2' })),
      );
      expect(error).toBeInstanceOf(ValidationException);
      // The body's own checks come before the rules and the connection (docs/routing.md).
      expect(Object.keys((error as ValidationException).errors!).sort()).toEqual(['token']);
      const refused = await refusedWith(s.creation.create(origin(), body({ currency: 'EUR' })));
      expect(Object.keys((refused as ValidationException).errors!).sort()).toEqual(['currency']);
      expect(await count('transactions')).toBe(0);
      expect(await events()).toEqual([]);
      expect(s.processor.authorize).not.toHaveBeenCalled();
    });

    it('a vendor failure is an authorization_failed transaction, not an error', async () => {
      const s = await setup();
      s.processor.authorize.mockRejectedValueOnce(new Error('vendor said 400'));
      const tx = await s.creation.create(origin(), body());
      expect(tx).toMatchObject({ status: 'authorization_failed', error_code: 'processor_error' });
      expect(await audit()).toEqual(['Transaction created: authorization_failed']);
    });

    it('a challenge stores the buyer approval link (its digest and sealed token) with the outcome', async () => {
      const s = await setup();
      s.processor.authorize.mockResolvedValueOnce({ ...approved(), outcome: 'challenge' });
      const tx = await s.creation.create(origin(), body());
      expect(tx.status).toBe('buyer_approval_pending');
      expect(tx.payment_method.approval_url).toBe('https://vault.test/approve');
      expect(s.issue).toHaveBeenCalledTimes(1);
      const row = (await s.transactions.find(TENANT, tx.id))!;
      expect(row.approval_token_hash).toEqual(Buffer.from('digest'));
      expect(row.approval_token).toEqual(Buffer.from('sealed'));
      expect(row.approval_expires_at).toEqual(new Date(row.created_at.getTime() + 15 * 60_000));
    });
  });

  describe('idempotency: a retry never charges twice', () => {
    it('pins the transaction on the claim in the change that inserts it; the response is left to the interceptor', async () => {
      const s = await setup();
      const c = claim();
      const tx = await s.creation.create(origin(TENANT, c), body());
      expect(c.pin).toHaveBeenCalledTimes(1);
      expect(c.pin.mock.calls[0][1]).toBe(tx.id);
      expect(statusesOf(c.pin.mock.calls[0][0])).toEqual([['transaction:created', 'processing']]);
      expect(c.record).not.toHaveBeenCalled();
    });

    it('a retry that took over a stale claim (resumed) answers that transaction, calling no vendor', async () => {
      const s = await setup();
      const first = await s.creation.create(origin(), body());
      s.processor.authorize.mockClear();
      const before = await events();
      const retried = await s.creation.create(origin(TENANT, claim(first.id)), body());
      expect(retried).toEqual(first);
      expect(s.processor.authorize).not.toHaveBeenCalled();
      expect(await events()).toEqual(before);
      expect(await count('transactions')).toBe(1);
    });

    it('capture and refund pin their resource; a retry after the request died answers it as it stands, no 409, no second call', async () => {
      const s = await setup();
      const tx = await s.creation.create(origin(), body());
      const c = claim();
      const captured = await s.service.capture(origin(TENANT, c), tx.id);
      expect(c.pin.mock.calls.map((call) => call[1])).toEqual([tx.id]);
      // The answer was never recorded (the request died): its retry takes the stale claim over.
      s.processor.capture.mockClear();
      const again = await s.service.capture(origin(TENANT, claim(tx.id)), tx.id);
      expect(again).toEqual(captured);
      expect(s.processor.capture).not.toHaveBeenCalled();

      const r = claim();
      const refund = await s.service.refund(origin(TENANT, r), tx.id, 200);
      expect(r.pin.mock.calls.map((call) => call[1])).toEqual([refund.id]);
      s.processor.refund.mockClear();
      expect(await s.service.refund(origin(TENANT, claim(refund.id)), tx.id, 200)).toEqual(refund);
      expect(s.processor.refund).not.toHaveBeenCalled();
      expect(await count('refunds')).toBe(1);
    });

    it('a pin refused (a retry took the claim over) rolls the insert back and calls no vendor', async () => {
      const s = await setup();
      const c = claim();
      c.pin.mockRejectedValueOnce(new Error('taken over'));
      await expect(s.creation.create(origin(TENANT, c), body())).rejects.toThrow('taken over');
      expect(await count('transactions')).toBe(0);
      expect(await events()).toEqual([]);
      expect(s.processor.authorize).not.toHaveBeenCalled();
    });

    it('an outcome that cannot be written leaves the transaction processing; the job settles it once, asking, never charging', async () => {
      const s = await setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      jest.spyOn(s.transactions, 'apply').mockRejectedValueOnce(new Error('connection lost'));
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      expect(tx).toMatchObject({ status: 'processing', intent_outcome: 'pending' });
      // The outcome's change rolled back whole: no event of it, no audit row.
      expect(await events()).toEqual([['transaction:created', 'processing']]);
      expect(await audit()).toEqual([]);
      // Not yet stuck: the job leaves it alone.
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_1' });
      expect(await s.settlement.settle()).toBe(1);
      expect(await s.settlement.settle()).toBe(0);
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
      expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('capture_succeeded');
      expect((await audit()).filter((m) => m.startsWith('Settled'))).toEqual([
        'Settled authorize (succeeded): capture_succeeded',
      ]);
    });
  });

  describe('an unanswered vendor is left to settlement', () => {
    it('authorize: processing, the CVC forgotten all the same, then settled by the job as the service', async () => {
      const s = await setup();
      s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const tx = await s.creation.create(origin(), body());
      expect(tx.status).toBe('processing');
      expect(await audit()).toEqual(['Processor did not answer: processing, left to settlement']);
      expect(s.forgotten.map((f) => f.tokenId)).toEqual([TOKEN]);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      s.processor.pollStatus.mockResolvedValue({ status: 'not_found' });
      expect(await s.settlement.settle()).toBe(1);
      expect((await auditRows()).at(-1)).toMatchObject({
        tenant_id: TENANT,
        actor_id: null,
        actor_type: 'system',
        message: 'Settled authorize (unknown to the processor): authorization_failed',
      });
    });

    it('a job that settled it while the call ran keeps its outcome; the request only logs', async () => {
      const s = await setup();
      let id = '';
      s.processor.authorize.mockImplementationOnce(async () => {
        [id] = await transactionIds();
        // The call outlasts STUCK_AFTER_MS: the job asks the vendor, which knows nothing of it yet.
        s.clock.advance(STUCK_AFTER_MS + 1_000);
        expect(await s.settlement.settle()).toBe(1);
        return approved();
      });
      const tx = await s.creation.create(origin(), body());
      expect(tx).toMatchObject({ id, status: 'authorization_failed', error_code: 'processor_timeout' });
      const messages = await audit();
      expect(messages).toHaveLength(2);
      expect(messages[0]).toBe('Settled authorize (unknown to the processor): authorization_failed');
      // The request's own change wrote its audit row and no event.
      expect(await events(tx.id)).toEqual([
        ['transaction:created', 'processing'],
        ['transaction:updated', 'authorization_failed'],
      ]);
    });
  });

  describe('settlement of buyer approvals', () => {
    it('expires a challenge the buyer never answered, as the service', async () => {
      const s = await setup();
      s.processor.authorize.mockResolvedValueOnce({ ...approved(), outcome: 'challenge' });
      const tx = await s.creation.create(origin(), body());
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(15 * 60_000 + 1_000);
      expect(await s.settlement.settle()).toBe(1);
      expect((await auditRows()).at(-1)).toMatchObject({
        actor_type: 'system',
        message: 'Buyer approval expired: authorization_failed',
      });
      const row = (await s.transactions.find(TENANT, tx.id))!;
      expect(row).toMatchObject({ status: 'authorization_failed', error_code: 'approval_expired' });
      expect(row.approval_token).toBeNull();
    });
  });

  describe('tenant isolation as the service sees it', () => {
    it("another tenant's caller gets 404 for every operation and cannot pay with the tenant's connection or token", async () => {
      const s = await setup();
      const tx = await s.creation.create(origin(), body());
      const before = await events();
      for (const attempt of [
        s.service.capture(origin(OTHER), tx.id),
        s.service.void(origin(OTHER), tx.id),
        s.service.refund(origin(OTHER), tx.id),
      ]) {
        const error = await refusedWith(attempt);
        expect(error).toBeInstanceOf(OrchestrationException);
        expect(error).toMatchObject({ code: OrchestrationErrorCode.NotFound });
      }
      // Neither the token nor, once the token is its own, the connection.
      const error = await refusedWith(s.creation.create(origin(OTHER), body()));
      expect(Object.keys((error as ValidationException).errors!).sort()).toEqual(['token']);
      const ownToken = await s.loadForUse(origin().actor, TOKEN);
      s.loadForUse.mockResolvedValueOnce({ ...ownToken!, tenant_id: OTHER });
      const own = await refusedWith(s.creation.create(origin(OTHER), body()));
      expect(Object.keys((own as ValidationException).errors!).sort()).toEqual(['connection_id']);
      expect(await events()).toEqual(before);
      expect(await count('transactions')).toBe(1);
      expect(s.processor.capture).not.toHaveBeenCalled();
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
    });

    it("the job's changes are each made for the transaction's own tenant", async () => {
      const s = await setup();
      s.processor.authorize.mockRejectedValue(new ProcessorUnavailable('timeout'));
      await s.creation.create(origin(), body());
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      await s.settlement.settle();
      expect((await auditRows()).at(-1)).toMatchObject({ tenant_id: TENANT, actor_type: 'system' });
    });
  });
});
