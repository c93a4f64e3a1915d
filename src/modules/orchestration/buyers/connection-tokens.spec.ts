import { connectionTokenErrors, lastFourOf, maskedToken } from './connection-tokens';

const STRIPE = '00000000-0000-4000-8000-0000000000c1';
const ADYEN = '00000000-0000-4000-8000-0000000000c2';
const CHECKOUT = '00000000-0000-4000-8000-0000000000c3';
const SANDBOX = '00000000-0000-4000-8000-0000000000c4';
const formulas = new Map([
  [STRIPE, 'stripe-card'],
  [ADYEN, 'adyen-card'],
  [CHECKOUT, 'checkout-card'],
  [SANDBOX, 'nmi-card'],
]);

describe('connection tokens: the checks and the mask', () => {
  it("takes each rail's own form, and anything at a simulated formula", () => {
    expect(
      connectionTokenErrors(
        [
          { connection_id: STRIPE, token: 'pm_1QbX4sL8Xk2c', connection_customer: 'cus_R7aKq2' },
          { connection_id: ADYEN, token: 'M5N7TQ4TG5PFWR50', connection_customer: 'shopper-8231' },
          { connection_id: CHECKOUT, token: `src_${'a'.repeat(26)}` },
          { connection_id: SANDBOX, token: 'anything at all' },
        ],
        formulas,
      ),
    ).toEqual({});
  });

  it('names each problem by its path, never repeating a value', () => {
    const errors = connectionTokenErrors(
      [
        { connection_id: STRIPE, token: 'tok_visa', connection_customer: 'cus_R7aKq2' },
        { connection_id: ADYEN, token: 'M5N7TQ4TG5PFWR50' },
        { connection_id: CHECKOUT, token: 'src_short' },
        { connection_id: STRIPE.toUpperCase(), token: 'pm_1QbX4sL8Xk2c', connection_customer: 'cus_1' },
        { connection_id: '00000000-0000-4000-8000-0000000000f9', token: 'pm_1' },
      ],
      formulas,
    );
    expect(Object.keys(errors)).toEqual([
      'connection_tokens[0].token',
      'connection_tokens[1].connection_customer',
      'connection_tokens[2].token',
      'connection_tokens[3].connection_id',
      'connection_tokens[4].connection_id',
    ]);
    expect(JSON.stringify(errors)).not.toMatch(/tok_visa|src_short|M5N7/);
  });

  it('shows the last four characters of a token longer than 8, none of a shorter one', () => {
    expect(maskedToken(lastFourOf('pm_1QbX4sL8Xk2c'))).toBe('****Xk2c');
    expect(maskedToken(lastFourOf('8b3xf5x1'))).toBe('****');
  });
});
