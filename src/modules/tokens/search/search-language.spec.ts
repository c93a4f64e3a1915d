import fc from 'fast-check';
import { ValidationException } from '../../../common/errors/domain.exception';
import { SqlParams } from '../../../database/sql';
import {
  filtersToQuery,
  hasDataTerm,
  MAX_QUERY_DEPTH,
  MAX_QUERY_TERMS,
  parseTokenQuery,
  type SearchNode,
} from './search-language';
import { emptyFilters } from './list-query';
import { queryPredicate } from './token-search.repository';

const term = (field: 'id' | 'type' | 'fingerprint' | 'container' | 'data', value: string): SearchNode => ({
  kind: 'term',
  field,
  value,
});

/** The messages of the 400 a query gets (the test fails if it parses). */
function errorsOf(query: string): string[] {
  try {
    parseTokenQuery(query);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationException);
    const errors = (error as ValidationException).errors ?? {};
    expect(Object.keys(errors)).toEqual(['query']);
    return errors.query;
  }
  throw new Error(`${query} parsed`);
}

describe('parseTokenQuery (the Lucene-style search language, parsed by liqe)', () => {
  it.each<[string, SearchNode]>([
    [
      'type:card AND metadata.customer_id:"cust 1"',
      {
        kind: 'and',
        children: [term('type', 'card'), { kind: 'metadata', name: 'customer_id', value: 'cust 1' }],
      },
    ],
    [
      '(fingerprint:abc OR fingerprint:def) AND NOT container:/pci/low',
      {
        kind: 'and',
        children: [
          { kind: 'or', children: [term('fingerprint', 'abc'), term('fingerprint', 'def')] },
          { kind: 'not', child: term('container', '/pci/low') },
        ],
      },
    ],
    [
      'created_at:[2026-01-01 TO 2026-02-01]',
      {
        kind: 'range',
        field: 'created_at',
        from: { at: '2026-01-01T00:00:00Z', inclusive: true },
        to: { at: '2026-02-01T00:00:00Z', inclusive: true },
      },
    ],
  ])('parses %j', (query, expected) => {
    expect(parseTokenQuery(query)).toEqual(expected);
  });

  it('joins by space (AND), AND, OR, NOT and -, flattening chains of one operator, left to right', () => {
    expect(parseTokenQuery('type:a type:b AND type:c')).toEqual({
      kind: 'and',
      children: [term('type', 'a'), term('type', 'b'), term('type', 'c')],
    });
    expect(parseTokenQuery('type:a OR type:b OR type:c')).toEqual({
      kind: 'or',
      children: [term('type', 'a'), term('type', 'b'), term('type', 'c')],
    });
    // liqe has no precedence: operators apply left to right.
    expect(parseTokenQuery('type:a OR type:b AND type:c')).toEqual({
      kind: 'and',
      children: [{ kind: 'or', children: [term('type', 'a'), term('type', 'b')] }, term('type', 'c')],
    });
    expect(parseTokenQuery('-type:a NOT (type:b OR type:c)')).toEqual({
      kind: 'and',
      children: [
        { kind: 'not', child: term('type', 'a') },
        { kind: 'not', child: { kind: 'or', children: [term('type', 'b'), term('type', 'c')] } },
      ],
    });
    expect(parseTokenQuery('((type:a))')).toEqual(term('type', 'a'));
  });

  it('takes values as written: quoted with escapes, numbers and words unchanged, container paths', () => {
    expect(parseTokenQuery(String.raw`metadata.note:"say \"hi\"\\" data:'a b'`)).toEqual({
      kind: 'and',
      children: [{ kind: 'metadata', name: 'note', value: 'say "hi"\\' }, term('data', 'a b')],
    });
    expect(parseTokenQuery('data:0042 data:4242424242424242424 data:1.50 data:true data:null')).toEqual({
      kind: 'and',
      children: ['0042', '4242424242424242424', '1.50', 'true', 'null'].map((v) => term('data', v)),
    });
    expect(parseTokenQuery('container:/ OR container:/pci/high/ OR (container:/bank)')).toEqual({
      kind: 'or',
      children: ['/', '/pci/high/', '/bank'].map((v) => term('container', v)),
    });
    expect(parseTokenQuery('container:"/pci/ x"')).toEqual(term('container', '/pci/ x'));
    // A value inside quotes is never read as a range or a path.
    expect(parseTokenQuery('metadata.k:"created_at:[a TO b] container:/x"')).toEqual({
      kind: 'metadata',
      name: 'k',
      value: 'created_at:[a TO b] container:/x',
    });
    expect(parseTokenQuery(`id:tok_${'A'.repeat(396)}`)).toEqual(term('id', `tok_${'A'.repeat(396)}`));
    expect(parseTokenQuery('metadata.a-B_9:x')).toEqual({ kind: 'metadata', name: 'a-B_9', value: 'x' });
  });

  it('reads ranges: [] inclusive, {} exclusive, * open, dates and date-times with their zones', () => {
    expect(parseTokenQuery('expires_at:{2026-01-01T10:00+0100 TO *]')).toEqual({
      kind: 'range',
      field: 'expires_at',
      from: { at: '2026-01-01T10:00:00+01:00', inclusive: false },
    });
    expect(parseTokenQuery('created_at:[* TO 2026-01-01T10:00:05.123456}')).toEqual({
      kind: 'range',
      field: 'created_at',
      to: { at: '2026-01-01T10:00:05.123456Z', inclusive: false },
    });
    expect(parseTokenQuery('-expires_at:[* TO *]')).toEqual({
      kind: 'not',
      child: { kind: 'range', field: 'expires_at' },
    });
    expect(parseTokenQuery('created_at:[2026-01-01T00:00:00+05:30 TO 2026-01-01T00:00:00Z]')).toMatchObject({
      from: { at: '2026-01-01T00:00:00+05:30' },
    });
  });

  it('a query of spaces matches every token, as before', () => {
    expect(parseTokenQuery('   ')).toEqual({ kind: 'all' });
  });

  it.each<[string, string]>([
    ['type', 'a term needs a field at character 1'],
    ['type:card ???', 'a term needs a field at character 11'],
    ['type:a and type:b', 'a term needs a field at character 8'],
    ['(type:a', 'the query is incomplete at character 8 (its end)'],
    ['type:"open', 'the query is incomplete at character 11 (its end)'],
    ['type:a OR', 'the query is incomplete at character 10 (its end)'],
    ['type:a)', 'syntax error at character 7'],
    ['type:a AND AND type:b', 'syntax error at character 15'],
    ['id:-abc', 'syntax error at character 5'],
    ['type:a AND ()', 'empty parentheses at character 12'],
    ['colour:red', 'unknown search field colour at character 1'],
    ['type:a metadata:x', 'unknown search field metadata at character 8'],
    ['metadata.:x', 'a metadata field is metadata.<name>'],
    [`metadata.${'k'.repeat(129)}:x`, 'a metadata field is metadata.<name>'],
    ['type:>3', 'only field:value is supported, not :> at character 5'],
    ['type:', 'type needs a value right after the colon at character 6'],
    ['type:[1 TO 2]', 'type takes a value, not a range at character 6'],
    ['fingerprint:/ab+/', 'regular expressions are not supported at character 13'],
    ['type:ca*', 'wildcards are not supported at character 6'],
    ['id:"a b"', 'id values are 1 to 400 of A-Z a-z 0-9 _ - at character 4'],
    [`id:${'a'.repeat(401)}`, 'id values are 1 to 400'],
    ['created_at:2026-01-01', 'created_at takes a range such as [2026-01-01 TO 2026-02-01] at character 12'],
    ['type:a created_at:[2026-01-01]', 'created_at takes a range such as'],
    [
      'expires_at:[2026-02-30 TO *]',
      'expires_at range bounds are ISO 8601 dates or date-times, or * at character 12',
    ],
    ['created_at:[1 TO 2]', 'created_at range bounds are ISO 8601'],
    ['created_at:[2026-01-01T24:00Z TO *]', 'created_at range bounds are ISO 8601'],
    ['created_at:[2026-03-01 TO 2026-02-01]', 'created_at range starts after it ends at character 12'],
    ['metadata.k:"a\\u0000b"', 'a value contains the NUL character at character 12'],
  ])('refuses %j: %s', (query, message) => {
    const messages = errorsOf(query);
    expect(messages).toHaveLength(1);
    expect(messages[0].startsWith(message)).toBe(true);
  });

  it('never repeats a value in an error message', () => {
    for (const query of [
      'data:4242424242424242 AND (',
      'data:4242424242424242 secret',
      'id:"4242424242424242 x"',
      'data:4242424242424242*',
      'metadata.k:"4242424242424242" AND 4242424242424242:x',
    ]) {
      for (const message of errorsOf(query)) expect(message).not.toContain('4242');
    }
  });

  it('any string either parses or is a 400 naming query, never another error', () => {
    const pieces = fc.constantFrom(
      ...['type', 'id', 'data', 'container', 'metadata.k', 'created_at', 'expires_at', 'colour', ':', ':>'],
      ...[' ', 'AND', 'OR', 'NOT', '-', '(', ')', '"', "'", '\\', '[', ']', '{', '}', 'TO', '*', '?', '/'],
      ...['/pci/', 'card', '0042', '2026-01-01', '2026-01-01T10:00Z', 'x y', '\u0000', 'é', '\n'],
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 30 }), fc.string({ maxLength: 20 }), (parts, noise) => {
        for (const query of [parts.join(''), parts.join(' '), `${parts.join(' ')}${noise}`]) {
          try {
            parseTokenQuery(query);
          } catch (error) {
            expect(error).toBeInstanceOf(ValidationException);
            expect(Object.keys((error as ValidationException).errors ?? {})).toEqual(['query']);
          }
        }
      }),
      { seed: 42, numRuns: 1000 },
    );
  });

  it(`allows ${MAX_QUERY_TERMS} terms and ${MAX_QUERY_DEPTH} levels of nesting, no more`, () => {
    const terms = (n: number) => Array.from({ length: n }, (_, i) => `type:t${i}`).join(' OR ');
    expect(parseTokenQuery(terms(MAX_QUERY_TERMS))).toMatchObject({ kind: 'or' });
    const tooMany = terms(MAX_QUERY_TERMS + 1);
    expect(errorsOf(tooMany)).toEqual([
      `a query has at most 100 terms; term 101 is at character ${tooMany.lastIndexOf('type:') + 1}`,
    ]);
    // Each level alternates NOT and a group of two terms: NOT (type:x OR NOT (type:x OR ...)).
    const nested = (levels: number): string =>
      levels === 0
        ? 'type:x'
        : levels % 2
          ? `NOT ${nested(levels - 1)}`
          : `(type:y OR ${nested(levels - 1)})`;
    expect(() => parseTokenQuery(nested(MAX_QUERY_DEPTH))).not.toThrow();
    expect(errorsOf(nested(MAX_QUERY_DEPTH + 1))[0]).toMatch(/^a query nests at most 10 levels/);
  });
});

describe('queryPredicate (one parameterised SQL predicate)', () => {
  const digest = (value: string) => Buffer.from(`digest of ${value.length}`);
  const compile = (query: string) => {
    const p = new SqlParams();
    return { sql: queryPredicate({ query: parseTokenQuery(query), digest }, p), params: p.values };
  };

  it('puts every value in a parameter and digests data: values', () => {
    const { sql, params } = compile(
      'type:card AND metadata.customer_id:"cust 1" AND data:4242424242424242 AND container:/pci/ AND fingerprint:f1',
    );
    expect(sql).toBe(
      '(t.type = $1 AND t.metadata @> $2::jsonb AND EXISTS (SELECT 1 FROM token_search_indexes s WHERE s.tenant_id = t.tenant_id AND s.token_id = t.id AND s.digest = $3) AND ' +
        'EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length($4::text)) = $4::text) AND (t.fingerprint = $5 AND t.fingerprint_groups IS NULL))',
    );
    expect(params).toEqual(['card', '{"customer_id":"cust 1"}', digest('4242424242424242'), '/pci/', 'f1']);
    expect(JSON.stringify(params)).not.toContain('4242');
  });

  it('pushes NOT down to the terms, each negation true where its term is false, NULLs included', () => {
    const { sql, params } = compile(
      'NOT (type:card OR (metadata.k:v AND -container:/pci/)) AND NOT expires_at:[* TO *]',
    );
    expect(sql).toBe(
      '((t.type <> $1 AND (NOT COALESCE(t.metadata @> $2::jsonb, FALSE) OR ' +
        'EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length($3::text)) = $3::text))) AND ' +
        'NOT COALESCE(t.expires_at IS NOT NULL, FALSE))',
    );
    expect(params).toEqual(['card', '{"k":"v"}', '/pci/']);
  });

  it('compiles ranges with their bounds, and ids', () => {
    const { sql, params } = compile(
      'created_at:{2026-01-01 TO 2026-02-01T12:00+01:00] OR id:11111111-1111-1111-1111-111111111111',
    );
    expect(sql).toBe('((t.created_at > $1::timestamptz AND t.created_at <= $2::timestamptz) OR t.id = $3)');
    expect(params).toEqual([
      '2026-01-01T00:00:00Z',
      '2026-02-01T12:00:00+01:00',
      '11111111-1111-1111-1111-111111111111',
    ]);
    // Any token id (1 to 400 of [A-Za-z0-9_-]) is compared as it is; a uuid lower-cased.
    expect(compile('id:tok_1')).toMatchObject({ sql: 't.id = $1', params: ['tok_1'] });
    expect(compile('NOT id:tok_1')).toMatchObject({ sql: 't.id <> $1', params: ['tok_1'] });
    expect(compile('  ').sql).toBe('TRUE');
  });
});

describe('filtersToQuery (GET /tokens and GET /v2/tokens)', () => {
  it('ANDs every filter; no filter matches everything', () => {
    expect(filtersToQuery(emptyFilters())).toEqual({ kind: 'all' });
    const query = filtersToQuery({
      ...emptyFilters(),
      types: ['card'],
      metadata: [['plan', 'gold']],
      dataValues: ['x'],
    });
    expect(query).toEqual({
      kind: 'and',
      children: [term('type', 'card'), { kind: 'metadata', name: 'plan', value: 'gold' }, term('data', 'x')],
    });
    expect(hasDataTerm(query)).toBe(true);
    expect(hasDataTerm(parseTokenQuery('type:a OR NOT (type:b)'))).toBe(false);
  });
});
