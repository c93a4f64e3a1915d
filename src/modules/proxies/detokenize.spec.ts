import {
  ExpressionError,
  findExpressions,
  MAX_EXPRESSIONS,
  RenderedSizes,
  renderBytes,
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

  describe('sizes computed before rendering', () => {
    // Values chosen for every way a size can differ from a length: multi-byte UTF-8, JSON escapes
    // (short, \u00XX, quotes inside an object's JSON text), surrogate pairs, characters URL-encoding
    // keeps, turns into '+' or into %XX.
    const VALUES: unknown[] = [
      'plain',
      'é and 漢字 and 😀',
      'quote " backslash \\ newline \n tab \t bell \u0007',
      { nested: 'x"y\\z', n: [1, 2, null], e: 'é' },
      12.5,
      null,
      true,
      'a-b_c.d*e f+g&h=i%j/k?',
    ];
    const TEMPLATES = (id: string) => [
      `{{ ${id} }}`,
      `before {{ ${id} }} after é "q"`,
      `{{ ${id} }}{{ token: ${id} }} twice`,
      `{{ ${id} | json: '$.nested' }}`,
      `x {{ ${id} | json: '$.nested' }} y`,
      `{{ unknown-token }} stays`,
      'no expression at all \\ "',
    ];

    it.each(VALUES.map((value) => [JSON.stringify(value), value]))(
      'match the rendered request exactly for %s',
      (_, value) => {
        const templates = TEMPLATES(ID);
        const values = valuesFor(templates, value);
        values.delete('{{ unknown-token }}');
        const sizes = new RenderedSizes(values);
        const body = { list: templates, nested: { deep: templates[0], n: 3 }, k: templates[4] };
        expect(sizes.json(body)).toBe(Buffer.byteLength(JSON.stringify(renderJson(body, values))));
        for (const text of templates) {
          expect(sizes.text(text)).toBe(Buffer.byteLength(renderText(text, values)));
          const latin1 = Buffer.from(text, 'utf8').toString('latin1');
          expect(sizes.bytes(latin1)).toBe(renderBytes(latin1, values).length);
        }
        const pairs = templates.map((text, i): [string, string] => [`k${i} ${text}`, text]);
        const rendered = new URLSearchParams(
          pairs.map(([k, v]): [string, string] => [renderText(k, values), renderText(v, values)]),
        ).toString();
        expect(sizes.queryString(pairs)).toBe(rendered.length);
      },
    );

    it('measure a value once however often it is named', () => {
      const big = 'a'.repeat(64 * 1024);
      const text = Array.from({ length: 1000 }, () => `{{ ${ID} }}`).join(',');
      const sizes = new RenderedSizes(valuesFor([text], big));
      // Counted rather than timed (a clock would fail on a loaded machine): the value's bytes are measured
      // once as text and once as JSON, not once per name.
      const byteLength = jest.spyOn(Buffer, 'byteLength');
      try {
        expect(sizes.text(text)).toBe(1000 * big.length + 999);
        expect(sizes.json({ all: Array.from({ length: 1000 }, () => `{{ ${ID} }}`) })).toBe(
          1000 * (big.length + 2) + 999 + '{"all":[]}'.length,
        );
        const ofTheValue = byteLength.mock.calls.filter(
          ([text]) => typeof text === 'string' && text.includes(big),
        );
        expect(ofTheValue.length).toBeGreaterThan(0);
        expect(ofTheValue.length).toBeLessThanOrEqual(2);
      } finally {
        byteLength.mockRestore();
      }
    });
  });
});
