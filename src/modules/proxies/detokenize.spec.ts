import {
  ExpressionError,
  findExpressions,
  MAX_EXPRESSIONS,
  renderJson,
  renderText,
  select,
  stringsOf,
  Values,
} from './detokenize';

const ID = '3f0c3b4e-8a59-4d4b-9d4a-3c1f1e0b7a11';
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

function valuesFor(texts: string[], value: unknown): Values {
  const values: Values = new Map();
  for (const [text, expression] of findExpressions(texts)) values.set(text, select(expression, value));
  return values;
}

describe('proxy detokenization', () => {
  it('finds both forms, with and without a json path, each once', () => {
    const found = findExpressions([
      `{{ ${ID} }} and {{token: ${ID}}} and {{ ${ID} | json: '$.number' }}`,
      `{{ token: ${ID} | json: "$.expiration_month" }} {{ ${ID} }}`,
    ]);
    expect([...found.values()].map((e) => [e.tokenId, e.path.join('.')])).toEqual([
      [ID, ''],
      [ID, ''],
      [ID, 'number'],
      [ID, 'expiration_month'],
    ]);
  });

  it('leaves text that is not an expression alone', () => {
    expect(findExpressions(['{{ not an expression }}', '{{}}', '{ {x} }', 'plain']).size).toBe(0);
    expect(renderText('a {{ not an expression }} b', new Map())).toBe('a {{ not an expression }} b');
  });

  it('refuses a malformed json path, naming the expression', () => {
    const text = `{{ ${ID} | json: 'number' }}`;
    expect(() => findExpressions([text])).toThrow(ExpressionError);
    try {
      findExpressions([text]);
    } catch (error) {
      expect((error as ExpressionError).expression).toBe(text);
    }
  });

  it('caps the number of expressions in one request', () => {
    const many = Array.from({ length: MAX_EXPRESSIONS + 1 }, () => `{{ ${ID} }}`).join(' ');
    expect(() => findExpressions([many])).toThrow(/at most/);
  });

  it('a whole-string expression becomes the JSON value; inside a longer string, its text', () => {
    const body = {
      card: `{{ ${ID} }}`,
      number: `{{ ${ID} | json: '$.number' }}`,
      month: `{{ ${ID} | json: '$.expiration_month' }}`,
      missing: `{{ ${ID} | json: '$.nothing.here' }}`,
      sentence: `card {{ ${ID} | json: '$.number' }} exp {{ ${ID} | json: '$.expiration_month' }}`,
      nested: [{ deep: `{{ token: ${ID} | json: '$' }}` }],
      untouched: 7,
    };
    const values = valuesFor([...stringsOf(body)], CARD);
    expect(renderJson(body, values)).toEqual({
      card: CARD,
      number: '4242424242424242',
      month: 12,
      missing: null,
      sentence: 'card 4242424242424242 exp 12',
      nested: [{ deep: CARD }],
      untouched: 7,
    });
  });

  it('renders objects as JSON text and null as nothing inside text', () => {
    const text = `a={{ ${ID} }}&b={{ ${ID} | json: '$.none' }}`;
    expect(renderText(text, valuesFor([text], { x: 1 }))).toBe('a={"x":1}&b=');
  });

  it('keeps keys such as __proto__ as own properties', () => {
    const body = JSON.parse(`{"__proto__": {"polluted": "{{ ${ID} }}"}}`) as unknown;
    const out = renderJson(body, valuesFor([...stringsOf(body)], 'v')) as Record<string, unknown>;
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
