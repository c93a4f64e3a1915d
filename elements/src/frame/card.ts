/**
 * Card checks and formatting inside the frames. The number's brand, lengths, Luhn check and CVC length
 * are the vault's own rules (src/modules/tokens/data/card-rules.ts, bundled in): the frame accepts what
 * the API accepts. Expiry month and year not in the past (by the UTC month, as the API counts). Runs only
 * in the vault's origin.
 */
import valid from 'card-validator';
import {
  brandOf,
  candidateBrands,
  type CardBrand,
  cvcSizeOf,
  MAX_NUMBER_DIGITS,
  numberVerdict,
  schemeOf,
} from '../../../src/modules/tokens/data/card-rules';
import type { ErrorType } from '../shared/protocol';

export { brandOf, schemeOf };

/** A part's state: valid, or why not. */
export type PartState = { valid: true } | { valid: false; reason: ErrorType };
const VALID: PartState = { valid: true };
const incomplete: PartState = { valid: false, reason: 'incomplete' };
const invalid: PartState = { valid: false, reason: 'invalid' };

export const digitsOf = (value: string): string => value.replace(/\D/g, '');

/** The brand used to format while typing: the single candidate, else the first of several, else none. */
function formattingBrand(digits: string): CardBrand | null {
  return brandOf(digits) ?? candidateBrands(digits)[0] ?? null;
}

export function maxNumberLength(digits: string): number {
  const candidates = candidateBrands(digits);
  if (candidates.length === 0) return MAX_NUMBER_DIGITS;
  return Math.max(...candidates.flatMap((candidate) => candidate.lengths));
}

/** The number with spaces at its brand's gaps (4-4-4-4 for Visa, 4-6-5 for American Express). */
export function formatNumber(digits: string): string {
  const gaps = formattingBrand(digits)?.gaps ?? [4, 8, 12, 16];
  let out = '';
  for (let i = 0; i < digits.length; i++) {
    if (gaps.includes(i) && i > 0) out += ' ';
    out += digits[i];
  }
  return out;
}

const NUMBER_STATES = { valid: VALID, incomplete, invalid } as const;

/** The number's state, by the vault's rules (card-rules.ts numberVerdict). */
export const numberState = (digits: string): PartState => NUMBER_STATES[numberVerdict(digits)];

/** An expiry as typed: two-digit month, two-digit year (either may be partial). */
export interface Expiry {
  month: string;
  year: string;
}

/**
 * Reads what is in the expiry field: `MM / YY`, `M/YY`, `MM/YYYY` (autofill), or digits alone (`1230`,
 * `4` read as `04`).
 */
export function parseExpiry(raw: string): Expiry {
  if (raw.includes('/')) {
    const [first, ...rest] = raw.split('/');
    let month = digitsOf(first).slice(0, 2);
    if (month.length === 1 && month !== '0') month = `0${month}`;
    let year = digitsOf(rest.join(''));
    if (year.length === 4) year = year.slice(2);
    return { month, year: year.slice(0, 2) };
  }
  let digits = digitsOf(raw);
  if (digits.length > 0 && digits[0] > '1') digits = `0${digits}`;
  if (digits.length === 6 && digits.slice(2, 4) === '20') digits = digits.slice(0, 2) + digits.slice(4);
  return { month: digits.slice(0, 2), year: digits.slice(2, 4) };
}

/** `MM / YY`; while deleting, no separator is added after a lone month. */
export function formatExpiry(expiry: Expiry, deleting: boolean): string {
  if (expiry.year) return `${expiry.month} / ${expiry.year}`;
  if (expiry.month.length === 2 && !deleting) return `${expiry.month} / `;
  return expiry.month;
}

/** Cards are valid for at most this many years ahead (card-validator's limit too). */
const MAX_YEARS_AHEAD = 19;

export function expiryState(expiry: Expiry, now: Date = new Date()): PartState {
  const { month, year } = expiry;
  if (!month) return incomplete;
  if (month.length === 1) return month === '0' || month === '1' ? incomplete : invalid;
  const m = Number(month);
  if (m < 1 || m > 12) return invalid;
  if (year.length < 2) return incomplete;
  const fullYear = 2000 + Number(year);
  const current = now.getUTCFullYear() * 12 + now.getUTCMonth();
  if (fullYear * 12 + m - 1 < current) return invalid;
  if (fullYear > now.getUTCFullYear() + MAX_YEARS_AHEAD) return invalid;
  // card-validator agrees (it counts in local time: both must accept).
  return valid.expirationDate({ month, year: String(fullYear) }).isValid ? VALID : invalid;
}

/** The CVC lengths: the brand's, else 3 or 4 while the brand is unknown. */
export function cvcSizes(brand: CardBrand | null): number[] {
  return brand ? [brand.code.size] : [3, 4];
}

export function cvcState(digits: string, sizes: number[]): PartState {
  if (!digits) return incomplete;
  if (!/^\d+$/.test(digits)) return invalid;
  if (sizes.includes(digits.length)) return VALID;
  return digits.length < Math.min(...sizes) ? incomplete : invalid;
}

/**
 * The controller's last check of the assembled card, as the API will see it: the number, the expiry, and
 * the CVC of the brand's length (3 for an unknown brand, as the API requires).
 */
export function cardProblems(card: {
  number?: unknown;
  expiration_month?: unknown;
  expiration_year?: unknown;
  cvc?: unknown;
}): string[] {
  const problems: string[] = [];
  const number = typeof card.number === 'string' ? card.number : '';
  if (!numberState(number).valid) problems.push('number');
  const month = card.expiration_month;
  const year = card.expiration_year;
  if (
    typeof month !== 'number' ||
    typeof year !== 'number' ||
    !Number.isInteger(month) ||
    !Number.isInteger(year) ||
    year < 2000 ||
    year > 2099 ||
    !expiryState({ month: String(month).padStart(2, '0'), year: String(year % 100).padStart(2, '0') }).valid
  ) {
    problems.push('expiration_date');
  }
  if (card.cvc !== undefined) {
    const size = cvcSizeOf(brandOf(number));
    if (typeof card.cvc !== 'string' || !cvcState(card.cvc, [size]).valid) problems.push('cvc');
  }
  return problems;
}
