/**
 * The card number rules, one source for the vault's validation (validate-data.ts) and the card elements'
 * frames (elements/src/frame/card.ts, bundled by esbuild for the browser): which brand a number is, which
 * lengths it may have, the Luhn check, the CVC's length. Only card-validator is imported here, nothing of
 * Node or Nest, so that both builds take this file as it is; a spec (elements/test/card-rules.spec.ts) runs the same
 * numbers through both callers.
 */
import valid from 'card-validator';
import luhn10 from 'card-validator/dist/luhn-10';

export type CardBrand = NonNullable<ReturnType<typeof valid.number>['card']>;

/** Every card number, whatever its brand: 13 to 19 digits. */
export const MIN_NUMBER_DIGITS = 13;
export const MAX_NUMBER_DIGITS = 19;

/**
 * card-validator's options, the same everywhere: UnionPay numbers pass the Luhn check as every other
 * brand's must (card-validator exempts them unless told).
 */
const NUMBER_OPTIONS = { luhnValidateUnionPay: true };

type CardTypes = (digits: string) => CardBrand[];
/**
 * credit-card-type, as card-validator exposes it: a namespace object whose `default` is the function in
 * the browser bundle, the function itself under Node (its typings name the module's function).
 */
const exposed = valid.creditCardType as unknown as CardTypes | { default: CardTypes };
const cardTypes: CardTypes = typeof exposed === 'function' ? exposed : exposed.default;

/** The brands the leading digits may still be (several while ambiguous, none when unknown). */
export const candidateBrands = (digits: string): CardBrand[] => (digits ? cardTypes(digits) : []);

/** The one brand the leading digits name, or null while ambiguous or unknown. */
export function brandOf(digits: string): CardBrand | null {
  if (!digits) return null;
  return valid.number(digits, NUMBER_OPTIONS).card ?? null;
}

export const passesLuhn = (digits: string): boolean => luhn10(digits);

/** Whether a number is a card number, or may become one as more digits are typed. */
export type NumberVerdict = 'valid' | 'incomplete' | 'invalid';

/**
 * A number's verdict. Always 13 to 19 digits that pass Luhn; a known brand's number also has one of
 * the brand's lengths (card-validator's verdict); an unknown brand's, any of those lengths.
 */
export function numberVerdict(digits: string): NumberVerdict {
  if (!digits) return 'incomplete';
  if (!/^\d+$/.test(digits) || digits.length > MAX_NUMBER_DIGITS) return 'invalid';
  const long = digits.length >= MIN_NUMBER_DIGITS;
  if (cardTypes(digits).length > 0) {
    const verdict = valid.number(digits, NUMBER_OPTIONS);
    if (verdict.isValid && long && luhn10(digits)) return 'valid';
    return verdict.isPotentiallyValid ? 'incomplete' : 'invalid';
  }
  if (!long) return 'incomplete';
  if (luhn10(digits)) return 'valid';
  return digits.length < MAX_NUMBER_DIGITS ? 'incomplete' : 'invalid';
}

/** The CVC's length: the brand's, 3 for an unknown brand. */
export const cvcSizeOf = (brand: CardBrand | null | undefined): number => brand?.code.size ?? 3;

/** Card brands whose scheme name differs (as transactions, stored cards and the elements' events show it). */
const SCHEMES: Record<string, string> = { 'american-express': 'amex' };

/** The scheme a transaction, a stored card or an element shows for a card brand. */
export const schemeOf = (brand: string | null | undefined): string | null =>
  brand ? (SCHEMES[brand] ?? brand) : null;
