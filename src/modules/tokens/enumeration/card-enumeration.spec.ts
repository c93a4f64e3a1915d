import {
  countedNumber,
  countNumbers,
  countReads,
  CountedSoFar,
  enumerableNumbers,
  pendingGroups,
  readIdentity,
} from './card-enumeration';

const KEY = Buffer.alloc(32, 7);
const element = (type: 'card' | 'token', data: unknown, fingerprintInput: string) => ({
  type,
  validated: { data },
  fingerprintInput,
});

describe('card enumeration: the numbers an element answers a fingerprint of', () => {
  it('a card: its number', () => {
    expect(enumerableNumbers(element('card', { number: '4242424242424242' }, '4242424242424242'))).toEqual([
      '4242424242424242',
    ]);
  });

  it('any token whose fingerprint input holds a Luhn-valid run of 13 to 19 digits', () => {
    expect(enumerableNumbers(element('token', '4242424242424242', '4242424242424242'))).toEqual([
      '4242424242424242',
    ]);
    expect(enumerableNumbers(element('token', 'x', 'card 4242424242424242|2031'))).toEqual([
      '4242424242424242',
    ]);
    // Not Luhn-valid, too short, too long: nothing.
    expect(enumerableNumbers(element('token', 'x', '4242424242424241'))).toEqual([]);
    expect(enumerableNumbers(element('token', 'x', '424242424242'))).toEqual([]);
    expect(enumerableNumbers(element('token', 'x', '42424242424242424242'))).toEqual([]);
  });
});

describe('card enumeration: counting', () => {
  const n = (number: string) => countedNumber(KEY, number);
  const row = (number: string, countedBy: string): CountedSoFar => ({
    ...n(number),
    mine: countedBy === 'me',
  });
  // Luhn-valid numbers of one group (first 6 and last 4 digits).
  const group = ['4242420000004242', '4242420000184242', '4242420000264242', '4242420000344242'];

  it('keeps digests only, one group for the same first 6 and last 4 digits', () => {
    const a = n('4242424242424242');
    expect(a.group.equals(n(group[1]).group)).toBe(true);
    expect(a.number.equals(n(group[1]).number)).toBe(false);
    expect(a.number.toString('hex')).not.toContain('4242424242424242');
    expect(a.group.equals(n('4242434242424242').group)).toBe(false);
  });

  it('refuses past the limit; the same caller repeating a number adds nothing', () => {
    expect(group.every((x) => enumerableNumbers(element('token', x, x)).length === 1)).toBe(true);
    const existing = [row(group[0], 'me'), row(group[1], 'me')];
    expect(countNumbers([n(group[0])], existing, 'me', new Set(), 2)).toEqual([]);
    expect(countNumbers([n(group[2])], existing, 'me', new Set(), 2)).toBeUndefined();
    expect(countNumbers([n(group[2])], existing, 'me', new Set(), 3)).toHaveLength(1);
  });

  it('a number another caller counted adds one all the same (whether it passes never tells what others tokenized)', () => {
    const existing = [row(group[0], 'other'), row(group[1], 'other')];
    expect(countNumbers([n(group[0])], existing, 'me', new Set(), 2)).toBeUndefined();
  });

  it('a number stored in a token the caller may read adds nothing', () => {
    const existing = [row(group[0], 'other'), row(group[1], 'other')];
    expect(countNumbers([n(group[0])], existing, 'me', new Set([n(group[0]).fingerprint]), 2)).toEqual([]);
  });
});

describe('card enumeration: reads of tokens made by uncounted callers', () => {
  const group = ['4242420000004242', '4242420000184242', '4242420000264242', '4242420000344242'];
  const [g] = pendingGroups(KEY, [group[0]])!;
  const pending = (id: string, number: string) => ({
    tokenId: id,
    groups: pendingGroups(KEY, [number])!,
    identity: readIdentity(KEY, countedNumber(KEY, number).fingerprint),
  });

  it('pending groups: one per group, none for a token holding no card number', () => {
    expect(pendingGroups(KEY, [])).toBeNull();
    expect(pendingGroups(KEY, group)).toHaveLength(1);
    expect(pendingGroups(KEY, [group[0], '5555555555554444'])).toHaveLength(2);
    // Domain-separated: neither the fingerprint nor the number digest.
    const fingerprint = countedNumber(KEY, group[0]).fingerprint;
    expect(readIdentity(KEY, fingerprint).equals(countedNumber(KEY, group[0]).number)).toBe(false);
  });

  it('shows tokens in order while the group stays within the limit, withholds the rest, one row each', () => {
    const reads = group.map((x, i) => pending(`t${i}`, x));
    const { rows, shown } = countReads(reads, [], 'me', 2);
    expect([...shown]).toEqual(['t0', 't1']);
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.group.equals(g) && r.countedBy === 'me')).toBe(true);
  });

  it('what the window already holds counts; an identity this caller counted adds nothing; two tokens of one fingerprint count once', () => {
    const [a, b, c] = group.map((x, i) => pending(`t${i}`, x));
    const existing: CountedSoFar[] = [
      { group: g, number: a.identity, mine: true },
      { group: g, number: countedNumber(KEY, group[3]).number, mine: false },
    ];
    const decided = countReads([a, { ...a, tokenId: 'copy' }, b, c], existing, 'me', 3);
    expect([...decided.shown]).toEqual(['t0', 'copy', 't1']);
    expect(decided.rows).toHaveLength(1);
    // Counted by another caller only: adds one all the same.
    const other = countReads([a], [{ group: g, number: a.identity, mine: false }], 'me', 1);
    expect(other.shown.size).toBe(0);
  });
});
