import { initiationOf, paymentSourceOf } from './payment-initiation';

describe('payment initiation defaults', () => {
  it('defaults to ecommerce, customer-initiated, not subsequent', () => {
    expect(initiationOf({})).toEqual({
      paymentSource: 'ecommerce',
      merchantInitiated: false,
      isSubsequentPayment: false,
    });
  });

  it("a buyer's stored card charged without a token is card_on_file unless the request says otherwise", () => {
    expect(paymentSourceOf({}, true)).toBe('card_on_file');
    expect(paymentSourceOf({ payment_source: 'recurring' }, true)).toBe('recurring');
    expect(paymentSourceOf({ payment_source: 'recurring' })).toBe('recurring');
  });
});
