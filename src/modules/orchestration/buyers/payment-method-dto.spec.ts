import type { PaymentMethodRow } from './buyers.repository';
import { paymentMethodDto } from './buyers.service';

const row = (month: number, year: number): PaymentMethodRow => ({
  tenant_id: '00000000-0000-4000-8000-000000000001',
  token_id: 'tok',
  buyer_id: '00000000-0000-4000-8000-000000000002',
  fingerprint: 'fp',
  created_at: new Date('2026-01-01T00:00:00Z'),
  last_used_at: null,
  card_brand: 'american-express',
  mask: { number: '378282XXXXX0005', expiration_month: month, expiration_year: year },
});

describe('a stored card as answered', () => {
  it('shows the scheme, the last four and MM/YY, and is expired only once its expiry month has passed (UTC)', () => {
    const lastDay = new Date('2026-11-30T23:59:59Z');
    const nextMonth = new Date('2026-12-01T00:00:00Z');
    expect(paymentMethodDto(row(11, 2026), lastDay)).toMatchObject({
      type: 'payment-method',
      id: 'tok',
      method: 'card',
      scheme: 'amex',
      label: '0005',
      expiration_date: '11/26',
      status: 'active',
      last_used_at: null,
    });
    expect(paymentMethodDto(row(11, 2026), nextMonth).status).toBe('expired');
    expect(paymentMethodDto(row(1, 2027), nextMonth).status).toBe('active');
  });
});
