import type { Transition } from './transaction-state';
import type { NewTransaction, NotifiedVendors } from './transaction-types';

/** Examples for the SQL snapshots (`@GenerateSql`). */
export const TENANT = '00000000-0000-4000-8000-000000000001';
export const TRANSACTION = '00000000-0000-4000-8000-000000000002';
export const CONNECTION = '00000000-0000-4000-8000-000000000003';
export const AT = new Date('2026-01-02T03:04:05.000Z');
export const NOTIFIED: NotifiedVendors = {
  formulas: ['adyen-card'],
  waitingSince: new Date('2026-01-02T02:04:05.000Z'),
};
export const EXAMPLE: NewTransaction = {
  id: TRANSACTION,
  tenantId: TENANT,
  connectionId: CONNECTION,
  tokenId: '00000000-0000-4000-8000-000000000004',
  intent: 'authorize',
  amount: 1200,
  currency: 'USD',
  country: 'US',
  externalIdentifier: 'order-1',
  metadata: { order: '1' },
  paymentSource: 'ecommerce',
  merchantInitiated: false,
  isSubsequentPayment: false,
  previousSchemeTransactionId: null,
  threeDSessionId: null,
  paymentMethod: { scheme: 'visa', label: '4242', expiration_date: '12/2031', fingerprint: 'fp' },
  buyer: null,
  storePaymentMethod: false,
  createdBy: '00000000-0000-4000-8000-000000000005',
  createdAt: AT,
};
export const CAPTURE_BEGUN: Transition = {
  from: 'authorization_succeeded',
  patch: {
    status: 'processing',
    pending: { operation: 'capture', since: AT, amount: 1200 },
    previousStatus: 'authorization_succeeded',
  },
};
