import luhn10 from 'card-validator/dist/luhn-10';
import { hmac, hmacBase62 } from '../../../common/crypto/tenant-keys.service';
import type { ParsedElement } from '../tokenize/tokenize-request';

/** Runs of digits; those of 13 to 19 (the lengths of card numbers) are looked at. */
const DIGIT_RUNS = /\d+/g;

/**
 * The card numbers an element would answer a fingerprint of: a card's number, and any Luhn-valid run of
 * 13 to 19 digits in its evaluated fingerprint input (a `token` whose `fingerprint_expression` is
 * `{{ data }}` over a bare number has the fingerprint that number's card token has). Cheap: a regular
 * expression over a string the request evaluated anyway.
 */
export function enumerableNumbers(
  el: Pick<ParsedElement, 'type' | 'validated' | 'fingerprintInput'>,
): string[] {
  const numbers = new Set<string>();
  if (el.type === 'card' || el.type === 'network_token') {
    const number = (el.validated.data as { number?: unknown }).number;
    if (typeof number === 'string') numbers.add(number);
  }
  for (const [run] of el.fingerprintInput.matchAll(DIGIT_RUNS))
    if (run.length >= 13 && run.length <= 19 && luhn10(run)) numbers.add(run);
  return [...numbers];
}

/**
 * What the enumeration guard keeps of one number, never the number itself: the group (an HMAC of its
 * first 6 and last 4 digits under the tenant's fingerprint key), the number's own HMAC (both
 * domain-separated from fingerprints), and the fingerprint a token holding exactly that number has, to
 * find it among stored tokens.
 */
export interface CountedNumber {
  group: Buffer;
  number: Buffer;
  fingerprint: string;
}

/** A number's group: the HMAC of its first 6 and last 4 digits (domain-separated from fingerprints). */
const groupOf = (fingerprintKey: Buffer, number: string): Buffer =>
  hmac(fingerprintKey, `card-enumeration:group:${number.slice(0, 6)}:${number.slice(-4)}`);

export function countedNumber(fingerprintKey: Buffer, number: string): CountedNumber {
  return {
    group: groupOf(fingerprintKey, number),
    number: hmac(fingerprintKey, `card-enumeration:number:${number}`),
    fingerprint: hmacBase62(fingerprintKey, number),
  };
}

/** One row of the guard's counting state: a number a caller tokenized (and learnt the fingerprint of). */
export interface CountedRow {
  group: Buffer;
  number: Buffer;
  countedBy: string;
}

/** A number counted in the window, once however many callers counted it; `mine`: this caller did. */
export interface CountedSoFar {
  group: Buffer;
  number: Buffer;
  mine: boolean;
}

/**
 * The decision, per group: refused when the distinct numbers already counted in the window plus the
 * numbers this caller adds would pass `limit`. A number this caller counted before, or one stored in a
 * token it may read, adds nothing. A number only another caller counted adds one all the same: whether
 * a request passes must never depend on which numbers other callers tokenized (else, at the limit, a
 * pass would tell that a candidate is a stored card). Answers the rows to insert, or undefined when
 * refused.
 */
export function countNumbers(
  wanted: CountedNumber[],
  existing: CountedSoFar[],
  countedBy: string,
  readable: Set<string>,
  limit: number,
): CountedRow[] | undefined {
  const hex = (b: Buffer) => b.toString('hex');
  const fresh = new Map<string, CountedRow>();
  for (const n of wanted) {
    if (readable.has(n.fingerprint)) continue;
    const mine = existing.some((row) => row.mine && row.group.equals(n.group) && row.number.equals(n.number));
    if (!mine) fresh.set(`${hex(n.group)}:${hex(n.number)}`, { group: n.group, number: n.number, countedBy });
  }
  const groups = new Set([...fresh.values()].map((row) => hex(row.group)));
  for (const group of groups) {
    const counted = new Set(existing.filter((row) => hex(row.group) === group).map((row) => hex(row.number)));
    const adding = [...fresh.values()].filter((row) => hex(row.group) === group).length;
    if (counted.size + adding > limit) return undefined;
  }
  return [...fresh.values()];
}

/**
 * The groups a token's fingerprint has still to be counted in before a read shows it: those of the card
 * numbers its fingerprint input holds (`enumerableNumbers`), each once; null when it holds none.
 */
export function pendingGroups(fingerprintKey: Buffer, numbers: string[]): Buffer[] | null {
  if (!numbers.length) return null;
  if (numbers.length === 1) return [groupOf(fingerprintKey, numbers[0])];
  const groups = new Map(numbers.map((n) => groupOf(fingerprintKey, n)).map((g) => [g.toString('hex'), g]));
  return [...groups.values()];
}

/**
 * What a read counts of a token made by a caller the guard did not count: its stored fingerprint (under
 * a domain of its own), in each pending group. The fingerprint, not the number: it is what the reader
 * learns, so counting distinct fingerprints per group counts exactly the distinct answers it can compare
 * with a victim's, and it needs no decryption. An expression that collapses numbers gives them one
 * fingerprint, which tells them apart from nothing; one that splits a number (two expressions over the
 * same card) gives two fingerprints, counted twice; a number also counted at tokenize (by its number
 * digest) counts once more here. Each errs towards counting more, never less.
 */
export const readIdentity = (fingerprintKey: Buffer, fingerprint: string): Buffer =>
  hmac(fingerprintKey, `card-enumeration:fingerprint:${fingerprint}`);

/** A token a read would show the fingerprint of, whose fingerprint is not counted yet. */
export interface PendingRead {
  tokenId: string;
  groups: Buffer[];
  identity: Buffer;
}

/**
 * The decision of a read, token by token in the order given: a token is shown when, in each of its
 * groups, the distinct fingerprints and numbers counted in the window plus those this read adds stay
 * within `limit` (an identity this caller counted before adds nothing; one only another caller counted
 * adds one, as at tokenize). Answers the rows to insert and the tokens shown; the others are withheld.
 */
export function countReads(
  pending: PendingRead[],
  existing: CountedSoFar[],
  countedBy: string,
  limit: number,
): { rows: CountedRow[]; shown: Set<string> } {
  const hex = (b: Buffer) => b.toString('hex');
  const distinct = new Map<string, Set<string>>();
  const mine = new Set<string>();
  for (const row of existing) {
    const group = hex(row.group);
    if (!distinct.has(group)) distinct.set(group, new Set());
    distinct.get(group)!.add(hex(row.number));
    if (row.mine) mine.add(`${group}:${hex(row.number)}`);
  }
  const adding = new Map<string, number>();
  const rows = new Map<string, CountedRow>();
  const shown = new Set<string>();
  for (const read of pending) {
    const fresh = read.groups.filter((g) => !mine.has(`${hex(g)}:${hex(read.identity)}`));
    const fits = fresh.every(
      (g) => (distinct.get(hex(g))?.size ?? 0) + (adding.get(hex(g)) ?? 0) + 1 <= limit,
    );
    if (!fits) continue;
    shown.add(read.tokenId);
    for (const g of fresh) {
      const key = `${hex(g)}:${hex(read.identity)}`;
      mine.add(key);
      adding.set(hex(g), (adding.get(hex(g)) ?? 0) + 1);
      rows.set(key, { group: g, number: read.identity, countedBy });
    }
  }
  return { rows: [...rows.values()], shown };
}
