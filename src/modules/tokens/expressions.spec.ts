import { ExpressionEngine, ExpressionError } from './expressions';

describe('ExpressionEngine', () => {
  const engine = new ExpressionEngine();
  const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };

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
  ])('%s', (template, data, expected) => {
    expect(engine.evaluate(template, data)).toBe(expected);
  });

  it('rejects syntax errors, unknown filters and unknown variables', () => {
    expect(() => engine.parse('{{ data.number ')).toThrow(ExpressionError);
    expect(() => engine.evaluate('{{ data | nope }}', 'x')).toThrow(ExpressionError);
    expect(() => engine.evaluate('{{ data.missing }}', card)).toThrow(/cannot be evaluated/);
    expect(() => engine.evaluate('{{ other }}', card)).toThrow(ExpressionError);
  });

  it('cannot read files or include other templates', () => {
    expect(() => engine.evaluate('{% include "/etc/passwd" %}', 'x')).toThrow(ExpressionError);
    expect(() => engine.evaluate('{% render "x" %}', 'x')).toThrow(ExpressionError);
  });

  it('bounds the output and the work', () => {
    expect(() => engine.evaluate('{{ data | pad_left: 100000, "x" }}', 'a')).toThrow(/exceeds/);
    expect(() => engine.evaluate('{% for i in (1..100000000) %}{{ i }}{% endfor %}', 'a')).toThrow(
      ExpressionError,
    );
    expect(() => engine.parse('x'.repeat(2000))).toThrow(/longer/);
  });

  it('never puts the data in its error messages', () => {
    try {
      engine.evaluate('{{ data.number | divided_by: 0 }}', card);
    } catch (error) {
      expect(String(error)).not.toContain('4242424242424242');
    }
  });
});
