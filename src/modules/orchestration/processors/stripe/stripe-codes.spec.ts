import { neverSent } from '../processor-calls';
import { declineCode } from './stripe-results';

describe('stripe-card: refusal codes', () => {
  it.each([
    ['card_declined', 'generic_decline', 'declined'],
    ['card_declined', 'do_not_honor', 'declined'],
    ['card_declined', undefined, 'declined'],
    ['card_declined', 'insufficient_funds', 'insufficient_funds'],
    ['expired_card', undefined, 'expired_card'],
    ['incorrect_cvc', undefined, 'incorrect_cvv'],
    ['incorrect_number', undefined, 'invalid_card_number'],
    ['card_declined', 'fraudulent', 'fraudulent'],
    ['card_declined', 'lost_card', 'lost_or_stolen'],
    ['card_declined', 'stolen_card', 'lost_or_stolen'],
    ['card_declined', 'pickup_card', 'card_blocked'],
    ['card_declined', 'restricted_card', 'card_blocked'],
    ['card_declined', 'transaction_not_allowed', 'not_permitted'],
    ['card_declined', 'card_not_supported', 'not_permitted'],
    ['card_declined', 'invalid_account', 'invalid_card_number'],
    ['card_declined', 'card_velocity_exceeded', 'card_velocity_exceeded'],
    ['card_declined', 'Not A Code!', 'declined_other'],
  ])('%s / %s -> %s (only a generic refusal is soft)', (code, decline, expected) => {
    expect(declineCode(code, decline)).toBe(expected);
  });
});

describe('a network failure before anything was sent', () => {
  it('is told apart from one after sending, through causes and Stripe details', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(neverSent(refused)).toBe(true);
    expect(neverSent(new Error('fetch failed', { cause: refused }))).toBe(true);
    expect(neverSent({ detail: { code: 'ENOTFOUND' } })).toBe(true);
    expect(neverSent(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(false);
    expect(neverSent(Object.assign(new Error('aborted'), { code: 'UND_ERR_HEADERS_TIMEOUT' }))).toBe(false);
    expect(neverSent(undefined)).toBe(false);
  });
});
