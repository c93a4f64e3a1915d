import fc from 'fast-check';

/**
 * Random Liquid expressions for the fuzz tests: output tags with chains of filters (Liquid's, Basis
 * Theory's, removed and unknown ones) over the token's data, the tags the service refuses, long literals
 * and broken syntax. test/fuzz.e2e-spec.ts checks what the service answers; the timing tier
 * (test/timing/expressions.timing-spec.ts) checks, alone on the machine, that none holds the event loop.
 */
/** Liquid's filters, Basis Theory's, the ones the service removes, and some that do not exist. */
const FILTER_NAMES = [
  'append',
  'prepend',
  'replace',
  'replace_first',
  'remove',
  'split',
  'join',
  'slice',
  'truncate',
  'upcase',
  'downcase',
  'capitalize',
  'strip',
  'strip_html',
  'escape',
  'url_encode',
  'base64_encode',
  'base64_decode',
  'sha256',
  'hmac_sha256',
  'size',
  'first',
  'last',
  'reverse',
  'sort',
  'sort_natural',
  'uniq',
  'map',
  'where',
  'concat',
  'push',
  'compact',
  'times',
  'divided_by',
  'plus',
  'minus',
  'modulo',
  'date',
  'default',
  'json',
  'jsonify',
  'inspect',
  'array_to_sentence_string',
  'truncatewords',
  'number_of_words',
  'stringify',
  'json_stringify',
  'last4',
  'reveal_last',
  'card_bin',
  'pad_left',
  'pad_right',
  'to_string',
  'to_number',
  'to_boolean',
  'where_exp',
  'group_by_exp',
  'sample',
  'nope',
  'raw',
];
const expressionArgument = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -1e9, max: 1e9 }).map(String) },
  { weight: 3, arbitrary: fc.string({ maxLength: 12 }).map((text) => JSON.stringify(text)) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 900 }).map((n) => `"${'x'.repeat(n)}"`) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'data',
      'data.number',
      '(1..100000000)',
      '(1..5)',
      'nil',
      'true',
      'data[data.number]',
    ),
  },
);
const filterCall = fc
  .tuple(fc.constantFrom(...FILTER_NAMES), fc.array(expressionArgument, { maxLength: 3 }))
  .map(([name, args]) => (args.length ? `${name}: ${args.join(', ')}` : name));
const outputTag = fc
  .tuple(
    fc.constantFrom(
      'data',
      'data.number',
      'data.cvc',
      'data[data.number]',
      'data.nope',
      '"lit"',
      '(1..100000)',
      'nil',
    ),
    fc.array(filterCall, { maxLength: 8 }),
    fc.boolean(),
  )
  .map(([value, filters, trim]) =>
    trim ? `{{- ${[value, ...filters].join(' | ')} -}}` : `{{ ${[value, ...filters].join(' | ')} }}`,
  );
const liquidTag = fc.constantFrom(
  '{% assign x = data.number %}{{ x }}',
  '{% for i in (1..100000) %}{{ i }}{% endfor %}',
  '{% capture s %}xx{% endcapture %}{% for i in (1..26) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}{{ s }}',
  '{% raw %}{{ data }}{% endraw %}',
  '{% liquid echo data.number %}',
  '{%- if data -%}1{%- endif -%}',
  '{% include "/etc/passwd" %}',
  '{% comment %}',
  '{% increment n %}',
);
export const fuzzedExpression = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: outputTag },
      { weight: 1, arbitrary: liquidTag },
      {
        weight: 2,
        arbitrary: fc.oneof(
          { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
          { weight: 1, arbitrary: fc.integer({ min: 200, max: 1100 }).map((n) => 'y'.repeat(n)) },
        ),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          '{{',
          '}}',
          '{{ {{ data }} }}',
          '{%',
          '{{ data | }}',
          '{{ data | join: }}',
        ),
      },
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((parts) => parts.join(''));
