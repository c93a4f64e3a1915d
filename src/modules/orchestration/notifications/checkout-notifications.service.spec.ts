import { createHmac } from 'node:crypto';
import {
  approved,
  audit,
  auditRows,
  body,
  CONNECTION,
  origin,
  setup,
  TENANT,
  type Setup,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import type { UsableConnection } from '../connections/connections.service';
import type { ConnectionEntity } from '../connections/entities/connection.entity';
import { findFormula } from '../formulas/formulas';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { toReconciliationId } from '../processors/reconciliation';
import { RelayJournal } from '../relay/relay-journal';
import { RelayNotifications } from '../relay/relay-notifications';
import { RelayRefundsRepository } from '../relay/relay-refunds.repository';
import { CheckoutNotificationsService } from './checkout-notifications.service';

useTransactionsDatabase();

const SECRET = 'whsec_service_spec';
const PAYMENT = 'pay_abcdefghijklmnopqrstuvwxyz';

/** The transaction's connection as a Checkout.com one at the vendor's test environment. */
const checkoutConnection = (): UsableConnection => ({
  row: {
    tenantId: TENANT,
    id: CONNECTION,
    formulaId: 'checkout-card',
    method: 'card',
    displayName: 'Checkout.com',
    environment: 'test',
    active: true,
    status: 'available',
    acceptedCountries: ['US'],
    acceptedCurrencies: ['USD'],
    threeDSecureEnabled: true,
  } as ConnectionEntity,
  formula: findFormula('checkout-card')!,
  credentials: { webhook_secret: SECRET, secret_key: 'not-used', processing_channel_id: 'not-used' },
});

/** An event as Checkout.com sends it: its bytes and their signature under `secret`. */
function event(type: string, reference: string, secret = SECRET) {
  const raw = Buffer.from(
    JSON.stringify({
      id: 'evt_abcdefghijklmnopqrstuvwxyz',
      type,
      data: { id: PAYMENT, action_id: 'act_abcdefghijklmnopqrstuvwxyz', reference, amount: 100 },
    }),
  );
  return { raw, signature: createHmac('sha256', secret).update(raw).digest('hex') };
}

function service(s: Setup): CheckoutNotificationsService {
  (s.connections.loadForPayment as jest.Mock).mockImplementation(() => Promise.resolve(checkoutConnection()));
  return new CheckoutNotificationsService(
    s.transactions,
    s.refunds,
    s.journal,
    s.connections,
    s.clock,
    s.work,
    new RelayNotifications(
      new RelayRefundsRepository(s.dataSource),
      new RelayJournal(new RelayRefundsRepository(s.dataSource), s.clock),
      s.connections,
      s.work,
    ),
  );
}

async function pendingAuthorization(s: Setup) {
  s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
  const tx = await s.creation.create(origin(), body());
  return { tx, notifications: service(s), reference: s.journal.reconciliationId(tx.id) };
}

/**
 * Checkout.com's webhooks on the real repositories (transactions-fixture, its connection dressed as a
 * Checkout.com one): a verified event settles what a request left pending, as the system, once however
 * often it comes; a bad or missing signature is a 401 and changes nothing; events about payments made
 * elsewhere are ignored.
 */
describe('CheckoutNotificationsService (real repositories on PGlite)', () => {
  it('payment_approved settles a pending authorization once, as the system, with the payment id', async () => {
    const s = await setup();
    const { tx, notifications, reference } = await pendingAuthorization(s);
    const approvedEvent = event('payment_approved', reference);
    await notifications.receive(approvedEvent.raw, approvedEvent.signature);
    await notifications.receive(approvedEvent.raw, approvedEvent.signature);
    expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({
      status: 'authorization_succeeded',
      connection_transaction_id: PAYMENT,
    });
    const settled = (await auditRows()).filter((row) => row.message.startsWith('Checkout.com'));
    expect(settled).toEqual([
      expect.objectContaining({
        actor_type: 'system',
        message: 'Checkout.com webhook payment_approved: authorization_succeeded',
      }),
    ]);
  });

  it('a wrong or missing signature, or a body that is not an event, is a 401: nothing changes', async () => {
    const s = await setup();
    const { tx, notifications, reference } = await pendingAuthorization(s);
    const forged = event('payment_declined', reference, 'whsec_someone_else');
    await expect(notifications.receive(forged.raw, forged.signature)).rejects.toMatchObject({ status: 401 });
    const genuine = event('payment_declined', reference);
    await expect(notifications.receive(genuine.raw, undefined)).rejects.toMatchObject({ status: 401 });
    await expect(notifications.receive(Buffer.from('not json'), genuine.signature)).rejects.toMatchObject({
      status: 401,
    });
    await expect(notifications.receive({ parsed: true }, genuine.signature)).rejects.toMatchObject({
      status: 401,
    });
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('processing');
    expect((await audit()).filter((message) => message.startsWith('Checkout.com'))).toEqual([]);
  });

  it('ignores events about payments made elsewhere and about an earlier attempt', async () => {
    const s = await setup();
    const { tx, notifications, reference } = await pendingAuthorization(s);
    for (const [type, ref] of [
      ['payment_approved', 'ORD-5023-4E89'],
      ['payment_approved', `${reference}.a2`],
      ['card_verified', reference],
    ]) {
      const e = event(type, ref);
      await notifications.receive(e.raw, e.signature);
    }
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('processing');
  });

  it('payment_refunded settles the pending refund its reference names', async () => {
    const s = await setup();
    s.processor.authorize.mockResolvedValueOnce({ ...approved(true), connectionTransactionId: PAYMENT });
    const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
    s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const refund = await s.service.refund(origin(), tx.id, 300);
    const notifications = service(s);
    const e = event(
      'payment_refunded',
      `${s.journal.reconciliationId(tx.id)}.${toReconciliationId(refund.id)}`,
    );
    await notifications.receive(e.raw, e.signature);
    expect(await s.refunds.find(TENANT, tx.id, refund.id)).toMatchObject({ status: 'succeeded' });
    expect((await s.transactions.find(TENANT, tx.id))!.refunded_amount).toBe('300');
    expect((await audit()).at(-1)).toBe(
      `Checkout.com webhook payment_refunded: refund ${refund.id} succeeded`,
    );
  });

  it('payment_refunded of its payment settles the relay refund its reference names; a bad signature is refused', async () => {
    const s = await setup();
    const notifications = service(s);
    const repository = new RelayRefundsRepository(s.dataSource);
    const relay = await s.work.transaction({}, (change) =>
      repository.insert(change, {
        id: '00000000-0000-4000-8000-0000000000e2',
        tenantId: TENANT,
        connectionId: '00000000-0000-4000-8000-0000000000c1',
        vendorPaymentId: PAYMENT,
        amount: 400,
        currency: 'USD',
        reason: null,
        createdAt: s.clock.now(),
      }),
    );
    const key = toReconciliationId(relay.id);
    const forged = event('payment_refunded', `${key}.${key}`, 'wrong-secret');
    await expect(notifications.receive(forged.raw, forged.signature)).rejects.toMatchObject({ status: 401 });
    const e = event('payment_refunded', `${key}.${key}`);
    await notifications.receive(e.raw, e.signature);
    await notifications.receive(e.raw, e.signature);
    expect(await repository.find(TENANT, relay.id)).toMatchObject({
      status: 'succeeded',
      vendor_refund_id: 'act_abcdefghijklmnopqrstuvwxyz',
    });
    expect((await audit()).at(-1)).toBe('Checkout.com webhook payment_refunded: succeeded');
  });
});
