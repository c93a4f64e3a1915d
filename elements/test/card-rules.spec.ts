import fc from 'fast-check';
import type { FieldErrors } from '../../src/common/errors/problem.exception';
// The card elements' own checks, as the frame bundle runs them.
import { cardProblems } from '../src/frame/card';
import { numberVerdict, passesLuhn } from '../../src/modules/tokens/data/card-rules';
import { validateData } from '../../src/modules/tokens/data/validate-data';

const NOW = new Date('2026-11-22T00:00:00Z');

/** The API's verdict on a card: the fields it refuses. */
function serverRefuses(number: string, cvc?: string): { number: boolean; cvc: boolean } {
  const errors: FieldErrors = {};
  const card = { number, expiration_month: 12, expiration_year: 2030, ...(cvc ? { cvc } : {}) };
  validateData('card', card, 'data', NOW, errors);
  return { number: 'data.number' in errors, cvc: 'data.cvc' in errors };
}

/** The frame's verdict on the same card. */
function browserRefuses(number: string, cvc?: string): { number: boolean; cvc: boolean } {
  const problems = cardProblems({ number, expiration_month: 12, expiration_year: 2030, cvc });
  return { number: problems.includes('number'), cvc: problems.includes('cvc') };
}

/** `body` completed with the digit that makes it pass Luhn, or with one that makes it fail. */
function withCheckDigit(body: string, pass: boolean): string {
  const digit = [...'0123456789'].find((d) => passesLuhn(body + d) === pass)!;
  return body + digit;
}

/**
 * One source of card rules (src/modules/tokens/data/card-rules.ts) for the API and the frames. The API
 * takes any 13 to 19 digits that pass Luhn; the frames also check the brand's own lengths as a person
 * types (`numberVerdict`): a number the frames accept, the API accepts; one the API refuses, the frames
 * refuse.
 */
describe('the card rules of the API and of the card elements agree', () => {
  it.each([
    ['a Visa number of 13 digits (not a Visa length): the API takes it, the frames do not', '4222222222222'],
    ['an American Express number of 16 digits', withCheckDigit('378282246310005', true)],
  ])('%s', (_what, number) => {
    expect(serverRefuses(number).number).toBe(false);
    expect(browserRefuses(number).number).toBe(true);
    expect(numberVerdict(number)).not.toBe('valid');
  });

  it.each([
    ['a Visa number of 16 digits', '4242424242424242', true],
    ['a Visa number of 19 digits', withCheckDigit('424242424242424242', true), true],
    ['a Visa number failing Luhn', '4242424242424241', false],
    ['an American Express number of 15 digits', '378282246310005', true],
    ['a Mastercard number', '5555555555554444', true],
    ['a UnionPay number', '6200000000000005', true],
    ['a UnionPay number failing Luhn', '6200000000000006', false],
    ['a UnionPay number of 19 digits', withCheckDigit('620000000000000000', true), true],
    ['a Maestro number of 12 digits (below 13)', withCheckDigit('50000000000', true), false],
    ['a number of no known brand, 15 digits passing Luhn', withCheckDigit('10000000000000', true), true],
    ['a number of no known brand failing Luhn', withCheckDigit('10000000000000', false), false],
    ['20 digits', withCheckDigit('4242424242424242424', true), false],
  ])('%s: accepted by both or refused by both', (_what, number, accepted) => {
    expect(serverRefuses(number).number).toBe(!accepted);
    expect(browserRefuses(number).number).toBe(!accepted);
    expect(numberVerdict(number) === 'valid').toBe(accepted);
  });

  it.each([
    ['Visa', '4242424242424242', '123', '1234'],
    ['American Express', '378282246310005', '1234', '123'],
    ['UnionPay', '6200000000000005', '123', '1234'],
    ['an unknown brand', withCheckDigit('10000000000000', true), '123', '1234'],
  ])('the CVC of %s has the same length for both', (_brand, number, good, bad) => {
    expect(serverRefuses(number, good).cvc).toBe(false);
    expect(browserRefuses(number, good).cvc).toBe(false);
    expect(serverRefuses(number, bad).cvc).toBe(true);
    expect(browserRefuses(number, bad).cvc).toBe(true);
  });

  it('agree on any number (the frames stricter only on brand lengths): brand prefixes, lengths 11 to 20, Luhn passed or failed', () => {
    const prefixes = ['4', '34', '37', '51', '2221', '6011', '62', '81', '35', '36', '50', '67', '1', '9'];
    const number = fc
      .tuple(
        fc.constantFrom(...prefixes),
        fc.integer({ min: 11, max: 20 }),
        fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 20 }),
        fc.boolean(),
      )
      .map(([prefix, length, rest, luhn]) =>
        withCheckDigit((prefix + rest + '0'.repeat(length)).slice(0, length - 1), luhn),
      );
    fc.assert(
      fc.property(number, (digits) => {
        const server = serverRefuses(digits).number;
        const browser = browserRefuses(digits).number;
        // Accepted by the frames: accepted by the API. Refused by the API: refused by the frames. Apart
        // only where the brand's lengths refuse what the API takes.
        if (!browser && server) return false;
        return server === browser || (numberVerdict(digits) !== 'valid' && passesLuhn(digits));
      }),
      { numRuns: 2000 },
    );
  });
});
