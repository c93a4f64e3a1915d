import { evaluateSimple, EXPRESSION_FAILURES, ExpressionEngine, ExpressionError } from './expression-engine';

describe('ExpressionEngine', () => {
  const engine = new ExpressionEngine();
  const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };
  const reason = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(ExpressionError);
      return (error as ExpressionError).reason;
    }
    return undefined;
  };

  it.each([
    ['{{ data.number }}', card, '4242424242424242'],
    ['{{ data.number | slice: -4, 4 }}', card, '4242'],
    ['{{ data.number | last4 }}', card, '4242'],
    ['{{ data.number | reveal_last: 4 }}', card, 'XXXXXXXXXXXX4242'],
    ['{{ data.number | card_bin }}', card, '42424242'],
    ['{{ data | card_bin }}', '378282246310005', '378282'],
    ['{{ data | stringify }}', 'abc', '"abc"'],
    ['{{ data | json_stringify }}', { a: 1 }, '{"a":1}'],
    ['{{ data | pad_left: 6, "0" }}', '42', '000042'],
    ['{{ data | pad_right: 4, "*" }}', 'ab', 'ab**'],
    ['{{ data | to_number | plus: 1 }}', '41', '42'],
    ['{{ data | to_string | append: "!" }}', 5, '5!'],
    ['{{ data | to_boolean }}', 'true', 'true'],
    [
      '{{ data.account_number }}|{{ data.routing_number }}',
      { account_number: '123', routing_number: '021000021' },
      '123|021000021',
    ],
    ['{{ data | upcase }}', 'abc', 'ABC'],
    ['{{ data.items | map: "k" | sort | join: "," }}', { items: [{ k: 'b' }, { k: 'a' }] }, 'a,b'],
    ['{{- data.number | slice: 0, 6 -}}', card, '424242'],
  ])('%s', (template, data, expected) => {
    expect(engine.render(template, data)).toBe(expected);
  });

  it('refuses every tag, and names the reason, not the template', () => {
    for (const template of [
      '{% assign x = 1 %}',
      '{% if data %}1{% endif %}',
      '{% raw %}x{% endraw %}',
      '{%- liquid echo data -%}',
      '{% include "/etc/passwd" %}',
      '{% render "x" %}',
      'a {% comment %} b {% endcomment %}',
    ]) {
      expect(reason(() => engine.parse(template))).toBe('tag');
    }
  });

  it('refuses syntax errors, unknown and removed filters, unknown variables, long templates', () => {
    expect(reason(() => engine.parse('{{ data.number '))).toBe('syntax');
    expect(reason(() => engine.parse('{{ data | nope }}'))).toBe('unknown_filter');
    expect(reason(() => engine.parse('{{ data | where_exp: "x", "x > 1" }}'))).toBe('unknown_filter');
    expect(reason(() => engine.parse('{{ data | sample }}'))).toBe('unknown_filter');
    expect(reason(() => engine.render('{{ data.missing }}', card))).toBe('unknown_variable');
    expect(reason(() => engine.render('{{ other }}', card))).toBe('unknown_variable');
    expect(reason(() => engine.parse('x'.repeat(2000)))).toBe('too_long');
  });

  it('refuses a filter result over 4 KiB even when a later filter shrinks it, and an output over 4 KiB', () => {
    // Sizes, not time: an engine with 10 s to render, so that a loaded machine does not answer too_slow.
    const engine = new ExpressionEngine(10_000);
    expect(reason(() => engine.render('{{ data | pad_left: 100000, "x" | size }}', 'a'))).toBe('too_large');
    expect(reason(() => engine.render('{{ data | append: data | size }}', 'x'.repeat(2100)))).toBe(
      'too_large',
    );
    expect(reason(() => engine.render('{{ data | split: "" | size }}', 'x'.repeat(3000)))).toBe('too_large');
    expect(reason(() => engine.render('{{ data }}{{ data }}', 'x'.repeat(2100)))).toBe('too_large');
    expect(engine.render('{{ data | pad_left: 4096, "x" | size }}', 'a')).toBe('4096');
    expect(reason(() => engine.render('{{ (1..100000000) | join }}', 'a'))).toBe('memory');
  });

  it('stops at its deadline', () => {
    expect(reason(() => engine.render('{{ data | upcase }}', 'a', performance.now() - 1))).toBe('too_slow');
  });

  it('never puts data, variable names or excerpts in its errors', () => {
    const secret = '4242424242424242';
    for (const [template, data] of [
      ['{{ data[data.number] }}', card],
      ['{{ data.number | divided_by: 0 }}', card],
      [`{{ data.${'n'}ope }}`, { ['secret_field_name']: secret }],
      ['{{ data | date: 5 }}', secret],
    ] as const) {
      try {
        engine.render(template, data);
      } catch (error) {
        expect(Object.values(EXPRESSION_FAILURES)).toContain((error as Error).message);
        expect(String(error)).not.toContain(secret);
        expect(String(error)).not.toContain('secret_field_name');
      }
    }
  });
});

describe('evaluateSimple (the expressions answered without Liquid)', () => {
  const engine = new ExpressionEngine();
  it.each([
    ['{{ data.number }}', { number: '4242424242424242' }],
    ['{{data.number}}', { number: '4242424242424242' }],
    ['{{ data | stringify }}', { a: [1, 'x'], b: null }],
    ['{{ data | json_stringify }}', 'text'],
    ['{{ data }}', 'plain'],
    ['{{ data.account_number }}|{{ data.routing_number }}', { account_number: '1', routing_number: '2' }],
    ['prefix {{ data.a }} suffix', { a: 'x' }],
  ])('%s gives what Liquid gives', (template, data) => {
    expect(evaluateSimple(template, data)).toBe(engine.render(template, data));
  });

  it.each([
    ['{{ data.number | last4 }}', { number: '1' }],
    ['{{ data.missing }}', { number: '1' }],
    ['{{ data.n }}', { n: 5 }],
    ['{{ data }}', { a: 1 }],
    ['{ {{ data.a }}', { a: 'x' }],
    ['no output', 'x'],
  ])('%s goes to Liquid', (template, data) => {
    expect(evaluateSimple(template, data)).toBeUndefined();
  });

  it('refuses an output over 4 KiB like Liquid does', () => {
    expect(() => evaluateSimple('{{ data | stringify }}', 'x'.repeat(5000))).toThrow(ExpressionError);
    expect(() => evaluateSimple('{{ data.a }}', { a: 'x'.repeat(5000) })).toThrow(ExpressionError);
  });
});
