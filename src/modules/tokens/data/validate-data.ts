import { addFieldError } from '../../../common/errors/problem.exception';
import {
  brandOf as cardBrandOf,
  type CardBrand,
  cvcSizeOf,
  passesLuhn,
} from './card-rules';
import type { FieldErrors } from '../../../common/errors/problem.exception';

export const TOKEN_TYPES = ['token', 'card', 'bank', 'network_token'] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];

export interface CardData {
  number: string;
  expiration_month: number;
  expiration_year: number;
  cvc?: string;
  /** Only on a card imported with the holder's name (docs/migration.md); tokenize takes none. */
  holder_name?: string;
}

/** Where a network token comes from (docs/wallets.md). */
export const NETWORK_TOKEN_SOURCES = ['apple_pay', 'google_pay', 'merchant'] as const;
export type NetworkTokenSource = (typeof NETWORK_TOKEN_SOURCES)[number];

/** A network token's data as stored: its cryptogram is sealed apart (as a card's CVC), never here. */
export interface NetworkTokenData extends Omit<CardData, 'cvc'> {
  eci?: string;
  scheme?: string;
  source: NetworkTokenSource;
}

export interface BankData {
  routing_number: string;
  account_number: string;
}

export interface TypeDefaults {
  containers: string[];
  fingerprintExpression: string;
}

export const TYPE_DEFAULTS: Record<TokenType, TypeDefaults> = {
  token: { containers: ['/general/high/'], fingerprintExpression: '{{ data | stringify }}' },
  card: { containers: ['/pci/high/'], fingerprintExpression: '{{ data.number }}' },
  network_token: { containers: ['/pci/high/'], fingerprintExpression: '{{ data.number }}' },
  bank: {
    containers: ['/bank/high/'],
    fingerprintExpression: '{{ data.account_number }}|{{ data.routing_number }}',
  },
};

/** The masked form of a card or bank: strings and numbers, never the clear number. */
export type TokenMask = Record<string, string | number>;

/** What validation keeps of a token's data: the value to seal, its mask, and facts orchestration needs. */
export interface ValidatedData {
  /** The data to encrypt (for cards, without the CVC, which is sealed apart). */
  data: unknown;
  cvc?: string;
  /** A network token's one-time cryptogram: sealed apart as a CVC is, never shown, revealed or proxied. */
  cryptogram?: string;
  mask?: TokenMask;
  /** Card scheme as card-validator names it (`visa`, `mastercard`, `american-express`, ...). */
  brand?: string;
  /** The card's BIN as kept (see binOf); answers and events show its first 6 digits (token-answer.ts). */
  bin?: string;
}

/** Schemes whose BINs are 8 digits since the 2022 ISO/IEC 7812 change (Visa, Mastercard). */
const EIGHT_DIGIT_BIN_SCHEMES = new Set(['visa', 'mastercard']);

/**
 * The BIN kept with a card token (for routing on BIN ranges): the first 8 digits of a 16-digit or longer
 * number of a scheme with 8-digit BINs, else the first 6. Only the first 6 are ever shown: 8 with the last
 * four leave a 16-digit number 4 unknown digits.
 */
export function binOf(digits: string, brand: string | undefined): string {
  const eight = digits.length >= 16 && brand !== undefined && EIGHT_DIGIT_BIN_SCHEMES.has(brand);
  return digits.slice(0, eight ? 8 : 6);
}

const maskDigits = (digits: string): string => 'X'.repeat(Math.max(digits.length - 4, 0)) + digits.slice(-4);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unknownFields(
  value: Record<string, unknown>,
  allowed: string[],
  path: string,
  errors: FieldErrors,
): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      addFieldError(errors, `${path}.${key}`, `${key} is not a field of this token type`);
  }
}

function validateCard(
  value: unknown,
  path: string,
  now: Date,
  errors: FieldErrors,
): ValidatedData | undefined {
  if (!isPlainObject(value)) {
    addFieldError(
      errors,
      path,
      'card data must be an object with number, expiration_month, expiration_year and optional cvc',
    );
    return undefined;
  }
  const start = Object.keys(errors).length;
  unknownFields(value, ['number', 'expiration_month', 'expiration_year', 'cvc'], path, errors);
  const { number, expiration_month: month, expiration_year: year, cvc } = value;
  let digits = '';
  if (typeof number !== 'string')
    addFieldError(errors, `${path}.number`, 'number must be a string of 13 to 19 digits');
  else {
    digits = number.replace(/[\s-]/g, '');
    if (!/^\d{13,19}$/.test(digits))
      addFieldError(errors, `${path}.number`, 'number must be 13 to 19 digits');
    // The API takes any number of 13 to 19 digits that passes Luhn, whatever its brand's usual lengths
    // (a 13-digit Visa is a card); the card elements also check the brand's lengths as a person types.
    else if (!passesLuhn(digits)) addFieldError(errors, `${path}.number`, 'card number fails the Luhn check');
  }
  if (typeof month !== 'number' || !Number.isInteger(month) || month < 1 || month > 12) {
    addFieldError(errors, `${path}.expiration_month`, 'expiration_month must be an integer from 1 to 12');
  }
  if (typeof year !== 'number' || !Number.isInteger(year) || year < 1000 || year > 9999) {
    addFieldError(errors, `${path}.expiration_year`, 'expiration_year must be a four-digit integer');
  }
  if (!errors[`${path}.expiration_month`] && !errors[`${path}.expiration_year`]) {
    const current = now.getUTCFullYear() * 12 + now.getUTCMonth();
    if ((year as number) * 12 + (month as number) - 1 < current) {
      addFieldError(errors, `${path}.expiration_year`, 'the card expired (month and year are in the past)');
    }
  }
  const brand = digits ? brandOf(digits) : undefined;
  if (cvc !== undefined) {
    const size = cvcSizeOf(brand);
    if (typeof cvc !== 'string' || !new RegExp(`^\\d{${size}}$`).test(cvc)) {
      addFieldError(
        errors,
        `${path}.cvc`,
        `cvc must be ${size} digits${brand ? ` for ${brand.niceType}` : ''}`,
      );
    }
  }
  if (Object.keys(errors).length > start) return undefined;
  return {
    data: { number: digits, expiration_month: month, expiration_year: year },
    cvc: cvc as string | undefined,
    mask: { number: maskDigits(digits), expiration_month: month as number, expiration_year: year as number },
    brand: brand?.type,
    bin: binOf(digits, brand?.type),
  };
}

const brands = new Map<string, CardBrand | undefined>();

/**
 * The card's brand (card-rules.ts). It depends only on the leading digits and the length, so it is
 * memoised by the first eight digits and the length (both displayable under PCI DSS), bounded in size:
 * brand detection was a tenth of the CPU time of a 100-card tokenize.
 */
function brandOf(digits: string): CardBrand | undefined {
  const key = `${digits.slice(0, 8)}:${digits.length}`;
  if (brands.has(key)) return brands.get(key);
  const brand = cardBrandOf(digits) ?? undefined;
  if (brands.size >= 10_000) brands.delete(brands.keys().next().value!);
  brands.set(key, brand);
  return brand;
}

const NETWORK_TOKEN_FIELDS = ['number', 'expiration_month', 'expiration_year', 'cryptogram', 'eci', 'scheme', 'source'];

/**
 * A network token (a DPAN with its expiry, as a card, and the facts of a wallet's or a merchant's
 * token): the number checked as a card's; the cryptogram (base64, at most 128 characters) sealed apart.
 * Messages never repeat a value.
 */
function validateNetworkToken(
  value: unknown,
  path: string,
  now: Date,
  errors: FieldErrors,
): ValidatedData | undefined {
  if (!isPlainObject(value)) {
    addFieldError(
      errors,
      path,
      'network_token data must be an object with number, expiration_month, expiration_year, source and optional cryptogram, eci and scheme',
    );
    return undefined;
  }
  const start = Object.keys(errors).length;
  unknownFields(value, NETWORK_TOKEN_FIELDS, path, errors);
  const { number, expiration_month, expiration_year, cryptogram, eci, scheme, source } = value;
  const card = validateCard({ number, expiration_month, expiration_year }, path, now, errors);
  if (cryptogram !== undefined && (typeof cryptogram !== 'string' || !/^[A-Za-z0-9+/=_-]{1,128}$/.test(cryptogram)))
    addFieldError(errors, `${path}.cryptogram`, 'cryptogram must be 1 to 128 base64 characters');
  if (eci !== undefined && (typeof eci !== 'string' || !/^\d{1,2}$/.test(eci)))
    addFieldError(errors, `${path}.eci`, 'eci must be one or two digits');
  if (scheme !== undefined && (typeof scheme !== 'string' || !/^[a-z][a-z_-]{1,31}$/.test(scheme)))
    addFieldError(errors, `${path}.scheme`, 'scheme must be a scheme name such as visa or mastercard');
  if (typeof source !== 'string' || !(NETWORK_TOKEN_SOURCES as readonly string[]).includes(source))
    addFieldError(errors, `${path}.source`, `source must be one of ${NETWORK_TOKEN_SOURCES.join(', ')}`);
  if (Object.keys(errors).length > start || !card) return undefined;
  const eciDigits = typeof eci === 'string' ? eci.padStart(2, '0') : undefined;
  const shownScheme = (scheme as string | undefined) ?? card.brand;
  return {
    data: {
      ...(card.data as object),
      ...(eciDigits ? { eci: eciDigits } : {}),
      ...(shownScheme ? { scheme: shownScheme } : {}),
      source,
    },
    ...(typeof cryptogram === 'string' ? { cryptogram } : {}),
    mask: { ...card.mask!, ...(shownScheme ? { scheme: shownScheme } : {}), source: source as string },
    brand: card.brand,
    bin: card.bin,
  };
}

/** ABA routing number checksum: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10). */
export function isAbaRoutingNumber(value: string): boolean {
  if (!/^\d{9}$/.test(value)) return false;
  const d = [...value].map(Number);
  return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10 === 0;
}

function validateBank(value: unknown, path: string, errors: FieldErrors): ValidatedData | undefined {
  if (!isPlainObject(value)) {
    addFieldError(errors, path, 'bank data must be an object with routing_number and account_number');
    return undefined;
  }
  const start = Object.keys(errors).length;
  unknownFields(value, ['routing_number', 'account_number'], path, errors);
  const { routing_number: routing, account_number: account } = value;
  if (typeof routing !== 'string' || !isAbaRoutingNumber(routing)) {
    addFieldError(
      errors,
      `${path}.routing_number`,
      'routing_number must be 9 digits with a valid ABA checksum',
    );
  }
  if (typeof account !== 'string' || !/^\d{4,17}$/.test(account)) {
    addFieldError(errors, `${path}.account_number`, 'account_number must be 4 to 17 digits');
  }
  if (Object.keys(errors).length > start) return undefined;
  return {
    data: { routing_number: routing, account_number: account },
    mask: { routing_number: routing as string, account_number: maskDigits(account as string) },
  };
}

/**
 * What a read through a reveal rule shows of a token's stored data: a card's
 * number and expiry (and holder's name, when imported with one; never a CVC, which is not stored with it anyway), a bank's two numbers, a `token`'s
 * JSON value.
 */
export function revealedData(type: TokenType, data: unknown): unknown {
  switch (type) {
    case 'card': {
      // `holder_name`: a card imported with one (docs/migration.md).
      const { number, expiration_month, expiration_year, holder_name } = data as CardData;
      return { number, expiration_month, expiration_year, ...(holder_name ? { holder_name } : {}) };
    }
    case 'bank': {
      const { routing_number, account_number } = data as BankData;
      return { routing_number, account_number };
    }
    case 'network_token': {
      // Its number behaves as a card's; its cryptogram is not in the data (sealed apart), so never here.
      const { number, expiration_month, expiration_year, eci, scheme, source } = data as NetworkTokenData;
      return { number, expiration_month, expiration_year, eci, scheme, source };
    }
    case 'token':
      return data;
  }
}

/** Validates `data` for its type; adds messages under `<path>...` and returns undefined when invalid. */
export function validateData(
  type: TokenType,
  data: unknown,
  path: string,
  now: Date,
  errors: FieldErrors,
): ValidatedData | undefined {
  switch (type) {
    case 'card':
      return validateCard(data, path, now, errors);
    case 'bank':
      return validateBank(data, path, errors);
    case 'network_token':
      return validateNetworkToken(data, path, now, errors);
    case 'token':
      if (data === undefined || data === null || data === '') {
        addFieldError(errors, path, 'data is required');
        return undefined;
      }
      return { data };
  }
}
