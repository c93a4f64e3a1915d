import {
  binMatches,
  Condition,
  holds,
  isBinPattern,
  matches,
  parseCondition,
  TransactionFacts,
} from './flow-conditions';

const FACTS: TransactionFacts = {
  amount: 1500,
  currency: 'USD',
  country: 'US',
  scheme: 'visa',
  bin: '42424242',
  paymentSource: 'ecommerce',
  merchantInitiated: false,
  intent: 'authorize',
  metadata: { plan: 'gold' },
};

const parsed = (input: unknown): Condition => {
  const condition = parseCondition(input);
  if (typeof condition === 'string') throw new Error(condition);
  return condition;
};

describe('flow conditions', () => {
  describe('parseCondition', () => {
    it.each([
      [{ name: 'amount', operator: 'is_between', value: { currency: 'USD', min: 0 } }],
      [{ name: 'amount', operator: 'is_between', value: { currency: 'EUR', max: 10 } }],
      [{ name: 'currency', operator: 'is_not_one_of', value: ['USD', 'EUR'] }],
      [{ name: 'country', operator: 'is_one_of', value: ['GB'] }],
      [{ name: 'card_scheme', operator: 'is_one_of', value: ['american-express'] }],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['4', '222100-272099', '424242'] }],
      [{ name: 'payment_source', operator: 'is_one_of', value: ['recurring', 'card_on_file'] }],
      [{ name: 'merchant_initiated', operator: 'equal_to', value: true }],
      [{ name: 'intent', operator: 'is_one_of', value: ['capture'] }],
      [{ name: 'metadata', operator: 'equal_to', value: { key: 'plan', value: '' } }],
    ])('accepts %j', (input) => {
      expect(parseCondition(input)).toEqual(input);
    });

    it.each([
      [null, 'object'],
      [{ name: 'amount', operator: 'is_between', value: { currency: 'USD' } }, 'at least one of min and max'],
      [
        { name: 'amount', operator: 'is_between', value: { currency: 'USD', min: 5, max: 4 } },
        'must not exceed',
      ],
      [{ name: 'amount', operator: 'is_between', value: { currency: 'usd', min: 5 } }, 'ISO 4217'],
      [{ name: 'amount', operator: 'is_between', value: { currency: 'USD', min: -1 } }, 'non-negative'],
      [{ name: 'amount', operator: 'is_between', value: { currency: 'USD', min: 1.5 } }, 'non-negative'],
      [{ name: 'amount', operator: 'is_one_of', value: { currency: 'USD', min: 1 } }, 'operator of amount'],
      [{ name: 'currency', operator: 'equal_to', value: ['USD'] }, 'operator of currency'],
      [{ name: 'currency', operator: 'is_one_of', value: [] }, 'array of 1 to 100'],
      [{ name: 'currency', operator: 'is_one_of', value: 'USD' }, 'array of 1 to 100'],
      [{ name: 'country', operator: 'is_one_of', value: ['USA'] }, 'alpha-2'],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['123456789'] }, 'BIN prefixes (1 to 6 digits)'],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['4242424'] }, 'BIN prefixes (1 to 6 digits)'],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['42424242'] }, 'BIN prefixes (1 to 6 digits)'],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['4000000-4999999'] }, 'BIN prefixes'],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['40-4'] }, 'BIN prefixes'],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['50-40'] }, 'BIN prefixes'],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['4a'] }, 'BIN prefixes'],
      [{ name: 'payment_source', operator: 'is_not_one_of', value: ['ecommerce'] }, 'operator'],
      [{ name: 'payment_source', operator: 'is_one_of', value: ['moto'] }, 'of ecommerce'],
      [{ name: 'merchant_initiated', operator: 'equal_to', value: 'true' }, 'boolean'],
      [{ name: 'intent', operator: 'is_one_of', value: ['refund'] }, 'of authorize'],
      [{ name: 'metadata', operator: 'equal_to', value: { key: 'a', value: 1 } }, '{key, value}'],
      [{ name: 'metadata', operator: 'equal_to', value: { key: '', value: 'x' } }, '{key, value}'],
      [{ name: 'bin', operator: 'is_one_of', value: ['4'] }, 'name must be one of'],
      [{ name: 'currency', operator: 'is_one_of', value: ['USD'], extra: 1 }, 'only name, operator'],
      [{ name: 'currency', operator: 'is_one_of', value: Array(101).fill('USD') }, 'array of 1 to 100'],
    ])('refuses %j', (input, message) => {
      const result = parseCondition(input);
      expect(typeof result).toBe('string');
      expect(result).toContain(message);
    });

    it('keeps each listed value once', () => {
      expect(parseCondition({ name: 'currency', operator: 'is_one_of', value: ['USD', 'USD'] })).toEqual({
        name: 'currency',
        operator: 'is_one_of',
        value: ['USD'],
      });
    });

    it('checks BIN patterns: prefixes of 1 to 6 digits, ranges of equal length (1 to 6) in order', () => {
      const valid = ['4', '424242', '2221-2720', '4-4', '222100-272099'];
      expect(valid.filter(isBinPattern)).toEqual(valid);
      const invalid = ['', '4242424', '42424242', '2720-2221', '22-2720', '-', '4-', '2221000-2720999'];
      expect(invalid.filter((p) => !isBinPattern(p))).toEqual(invalid);
    });
  });

  describe('holds', () => {
    it.each([
      [{ name: 'amount', operator: 'is_between', value: { currency: 'USD', min: 1500, max: 1500 } }, true],
      [{ name: 'amount', operator: 'is_between', value: { currency: 'USD', min: 1501 } }, false],
      [{ name: 'amount', operator: 'is_between', value: { currency: 'USD', max: 1499 } }, false],
      // An amount range in another currency never matches.
      [{ name: 'amount', operator: 'is_between', value: { currency: 'EUR', min: 0 } }, false],
      [{ name: 'currency', operator: 'is_one_of', value: ['EUR', 'USD'] }, true],
      [{ name: 'currency', operator: 'is_not_one_of', value: ['USD'] }, false],
      [{ name: 'country', operator: 'is_one_of', value: ['US'] }, true],
      [{ name: 'country', operator: 'is_not_one_of', value: ['GB'] }, true],
      [{ name: 'card_scheme', operator: 'is_one_of', value: ['mastercard'] }, false],
      [{ name: 'card_scheme', operator: 'is_not_one_of', value: ['mastercard'] }, true],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['4242'] }, true],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['5'] }, false],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['420000-429999'] }, true],
      [{ name: 'card_bin', operator: 'is_one_of', value: ['424243-424299'] }, false],
      [{ name: 'card_bin', operator: 'is_not_one_of', value: ['4'] }, false],
      [{ name: 'payment_source', operator: 'is_one_of', value: ['ecommerce'] }, true],
      [{ name: 'merchant_initiated', operator: 'equal_to', value: true }, false],
      [{ name: 'intent', operator: 'is_one_of', value: ['authorize'] }, true],
      [{ name: 'metadata', operator: 'equal_to', value: { key: 'plan', value: 'gold' } }, true],
      [{ name: 'metadata', operator: 'equal_to', value: { key: 'plan', value: 'silver' } }, false],
      [{ name: 'metadata', operator: 'equal_to', value: { key: 'other', value: 'gold' } }, false],
    ])('%j -> %s', (input, expected) => {
      expect(holds(parsed(input), FACTS)).toBe(expected);
    });

    it('a transaction without a country matches only is_not_one_of', () => {
      const facts = { ...FACTS, country: null };
      expect(holds(parsed({ name: 'country', operator: 'is_one_of', value: ['US'] }), facts)).toBe(false);
      expect(holds(parsed({ name: 'country', operator: 'is_not_one_of', value: ['US'] }), facts)).toBe(true);
    });

    it('compares at most the first 6 digits of the card, whatever a stored pattern holds', () => {
      // Rules written when 8 digits were taken are read as their first 6: the 7th and 8th digits of the
      // card decide nothing, so no dry run tells them.
      for (const bin of ['42424200', '42424299', '424242'])
        for (const pattern of ['42424242', '4242424', '42424200-42424210', '4242420-4242429'])
          expect(binMatches(bin, pattern)).toBe(true);
      expect(binMatches('42424299', '42424300-42424399')).toBe(false);
      expect(binMatches('42424342', '42424300-42424399')).toBe(true);
      // The facts may hold more digits than 6: the same answers.
      expect(binMatches('4242429', '4242420')).toBe(binMatches('424242', '4242420'));
    });

    it('a card shorter than a range bound does not fall inside it', () => {
      expect(
        holds(parsed({ name: 'card_bin', operator: 'is_one_of', value: ['4000-4999'] }), {
          ...FACTS,
          bin: '42',
        }),
      ).toBe(false);
    });

    it('a rule matches when every condition holds, and with none, always', () => {
      const usd = parsed({ name: 'currency', operator: 'is_one_of', value: ['USD'] });
      const gb = parsed({ name: 'country', operator: 'is_one_of', value: ['GB'] });
      expect(matches([], FACTS)).toBe(true);
      expect(matches([usd], FACTS)).toBe(true);
      expect(matches([usd, gb], FACTS)).toBe(false);
    });
  });
});
