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
import { adyenSignature, type SignedNotificationFields } from '../processors/adyen/adyen-hmac';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { toReconciliationId } from '../processors/reconciliation';
import { RelayJournal } from '../relay/relay-journal';
import { RelayNotifications } from '../relay/relay-notifications';
import { RelayRefundsRepository } from '../relay/relay-refunds.repository';
import { AdyenNotificationsService } from './adyen-notifications.service';

useTransactionsDatabase();

const HMAC_KEY = '44'.repeat(32);
const MERCHANT = 'VaultMerchant';

/** The transaction's connection as an Adyen one at the vendor's test environment. */
const adyenConnection = (): UsableConnection => ({
  row: {
    tenantId: TENANT,
    id: CONNECTION,
    formulaId: 'adyen-card',
    method: 'card',
    displayName: 'Adyen',
    environment: 'test',
    active: true,
    status: 'available',
    acceptedCountries: ['US'],
    acceptedCurrencies: ['USD'],
    threeDSecureEnabled: true,
  } as ConnectionEntity,
  formula: findFormula('adyen-card')!,
  credentials: { hmac_key: HMAC_KEY, merchant_account: MERCHANT, api_key: 'not-used' },
});

/** A notification item as Adyen sends it, signed with `key`. */
function item(fields: SignedNotificationFields, key = HMAC_KEY) {
  const signed = { merchantAccountCode: MERCHANT, success: 'true', pspReference: 'PSP1', ...fields };
  return {
    NotificationRequestItem: { ...signed, additionalData: { hmacSignature: adyenSignature(signed, key) } },
  };
}
const batch = (...items: ReturnType<typeof item>[]) => ({ live: 'false', notificationItems: items });

/** Relay refunds' side of the notifications, on the same database. */
const relayNotifications = (s: Setup) => {
  const repository = new RelayRefundsRepository(s.dataSource);
  return new RelayNotifications(repository, new RelayJournal(repository, s.clock), s.connections, s.work);
};

/**
 * Adyen's notifications on the real repositories (transactions-fixture, its connection dressed as an
 * Adyen one): a verified notification settles what a request left pending, as the service (audited as
 * the system), once however often it is sent; one bad signature refuses the whole batch, changing
 * nothing; items about payments made elsewhere are ignored.
 */
async function pendingAuthorization(s: Setup) {
  s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
  const tx = await s.creation.create(origin(), body());
  (s.connections.loadForPayment as jest.Mock).mockImplementation(() => Promise.resolve(adyenConnection()));
  const notifications = new AdyenNotificationsService(
    s.transactions,
    s.refunds,
    s.journal,
    s.connections,
    s.clock,
    s.work,
    relayNotifications(s),
  );
  return { tx, notifications, reference: s.journal.reconciliationId(tx.id) };
}

describe('AdyenNotificationsService (real repositories on PGlite)', () => {
  it('an AUTHORISATION settles a pending authorization once, as the system, however often it comes', async () => {
    const s = await setup();
    const { tx, notifications, reference } = await pendingAuthorization(s);
    const authorised = item({ eventCode: 'AUTHORISATION', merchantReference: reference });
    await notifications.receive(batch(authorised));
    await notifications.receive(batch(authorised));
    expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({ status: 'authorization_succeeded' });
    const settled = (await auditRows()).filter((row) => row.message.startsWith('Adyen'));
    expect(settled).toEqual([
      expect.objectContaining({
        actor_type: 'system',
        message: 'Adyen notification AUTHORISATION (success true): authorization_succeeded',
      }),
    ]);
  });

  it('one item with a bad signature refuses the whole batch (401): nothing changes', async () => {
    const s = await setup();
    const { tx, notifications, reference } = await pendingAuthorization(s);
    const good = item({ eventCode: 'AUTHORISATION', merchantReference: reference });
    const forged = item(
      { eventCode: 'AUTHORISATION', merchantReference: reference, success: 'false' },
      '55'.repeat(32),
    );
    await expect(notifications.receive(batch(good, forged))).rejects.toMatchObject({ status: 401 });
    await expect(notifications.receive({ notificationItems: 'nope' })).rejects.toMatchObject({ status: 401 });
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('processing');
    expect((await audit()).filter((message) => message.startsWith('Adyen'))).toEqual([]);
  });

  it('ignores items about payments made elsewhere: unknown references, another merchant account', async () => {
    const s = await setup();
    const { tx, notifications, reference } = await pendingAuthorization(s);
    await notifications.receive(
      batch(
        item({ eventCode: 'AUTHORISATION', merchantReference: 'not-ours' }),
        item({ eventCode: 'AUTHORISATION', merchantReference: reference, merchantAccountCode: 'Elsewhere' }),
      ),
    );
    expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('processing');
  });

  it('a REFUND settles the pending refund its reference names', async () => {
    const s = await setup();
    s.processor.authorize.mockResolvedValueOnce(approved(true));
    const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
    s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
    const refund = await s.service.refund(origin(), tx.id, 300);
    (s.connections.loadForPayment as jest.Mock).mockImplementation(() => Promise.resolve(adyenConnection()));
    const notifications = new AdyenNotificationsService(
      s.transactions,
      s.refunds,
      s.journal,
      s.connections,
      s.clock,
      s.work,
      relayNotifications(s),
    );
    const reference = `${s.journal.reconciliationId(tx.id)}.${toReconciliationId(refund.id)}`;
    await notifications.receive(batch(item({ eventCode: 'REFUND', merchantReference: reference })));
    expect(await s.refunds.find(TENANT, tx.id, refund.id)).toMatchObject({ status: 'succeeded' });
    expect((await s.transactions.find(TENANT, tx.id))!.refunded_amount).toBe('300');
    expect((await audit()).at(-1)).toBe(`Adyen notification REFUND: refund ${refund.id} succeeded`);
  });

  it('a REFUND settles the relay refund its reference names (its id, twice); a forged one is refused', async () => {
    const s = await setup();
    (s.connections.loadForPayment as jest.Mock).mockImplementation(() => Promise.resolve(adyenConnection()));
    const repository = new RelayRefundsRepository(s.dataSource);
    const relay = await s.work.transaction({}, (change) =>
      repository.insert(change, {
        id: '00000000-0000-4000-8000-0000000000e1',
        tenantId: TENANT,
        connectionId: CONNECTION,
        vendorPaymentId: 'ABCDEFGHIJKLMNOP',
        amount: 400,
        currency: 'USD',
        reason: null,
        createdAt: s.clock.now(),
      }),
    );
    const notifications = new AdyenNotificationsService(
      s.transactions,
      s.refunds,
      s.journal,
      s.connections,
      s.clock,
      s.work,
      relayNotifications(s),
    );
    const key = toReconciliationId(relay.id);
    const refund = item({
      eventCode: 'REFUND',
      merchantReference: `${key}.${key}`,
      pspReference: 'PSPREFUND1',
    });
    const forged = item(
      { eventCode: 'REFUND', merchantReference: `${key}.${key}`, success: 'false' },
      '55'.repeat(32),
    );
    await expect(notifications.receive(batch(forged))).rejects.toMatchObject({ status: 401 });
    expect(await repository.find(TENANT, relay.id)).toMatchObject({ status: 'processing' });
    await notifications.receive(batch(refund));
    await notifications.receive(batch(refund));
    expect(await repository.find(TENANT, relay.id)).toMatchObject({
      status: 'succeeded',
      vendor_refund_id: 'PSPREFUND1',
    });
    expect((await auditRows()).filter((row) => row.entity_type === 'relay_refund')).toEqual([
      expect.objectContaining({
        actor_type: 'system',
        entity_id: relay.id,
        message: 'Adyen notification REFUND (success true): succeeded',
      }),
    ]);
  });
});
