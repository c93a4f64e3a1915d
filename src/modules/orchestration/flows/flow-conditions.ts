/**
 * The conditions of flow rules, pure: what each condition name takes (its operators and the shape of its
 * value), the check of a condition a client sends (the message that names what is wrong), and whether a
 * transaction's facts meet a condition. A rule matches when all its conditions hold; a rule without
 * conditions matches every transaction.
 */

import { SHOWN_BIN_DIGITS } from '../../tokens/token-answer';
import { PAYMENT_SOURCES } from '../processors/payment-initiation';

export const FLOW = 'card-transaction';
export const ACTIONS = ['route-transaction', 'decline-early'] as const;
export type FlowAction = (typeof ACTIONS)[number];

export type Condition =
  | { name: 'amount'; operator: 'is_between'; value: { currency: string; min?: number; max?: number } }
  | { name: 'currency' | 'country' | 'card_scheme' | 'card_bin'; operator: SetOperator; value: string[] }
  | { name: 'payment_source'; operator: 'is_one_of'; value: string[] }
  | { name: 'merchant_initiated'; operator: 'equal_to'; value: boolean }
  | { name: 'intent'; operator: 'is_one_of'; value: string[] }
  | { name: 'metadata'; operator: 'equal_to'; value: { key: string; value: string } };

type SetOperator = 'is_one_of' | 'is_not_one_of';

/**
 * How many leading digits of a card a `card_bin` condition may name, and the most any evaluation compares:
 * as many as a masked read of the card shows. A longer prefix would let a key that may use a card (but
 * not read it) learn digits no read shows, a dry run at a time (`evaluate` answers whether a rule matched).
 */
export const BIN_DIGITS = SHOWN_BIN_DIGITS;

/** What a transaction create is matched on. `bin`: the stored card's first digits (never shown). */
export interface TransactionFacts {
  amount: number;
  currency: string;
  country: string | null;
  scheme: string | null;
  bin: string;
  paymentSource: string;
  merchantInitiated: boolean;
  intent: string;
  metadata: Record<string, string> | null;
}

const SET_OPERATORS: readonly string[] = ['is_one_of', 'is_not_one_of'];
const INTENTS = ['authorize', 'capture'];
const CURRENCY = /^[A-Z]{3}$/;
const COUNTRY = /^[A-Z]{2}$/;
const SCHEME = /^[a-z][a-z0-9-]{0,39}$/;
const BIN_PREFIX = /^[0-9]{1,6}$/;
const BIN_RANGE = /^([0-9]{1,6})-([0-9]{1,6})$/;
/** Any stored pattern, whatever its length: rules written before BIN_DIGITS took up to 8 digits. */
const STORED_BIN_RANGE = /^([0-9]+)-([0-9]+)$/;
const MAX_VALUES = 100;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isAmount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** A list of 1 to 100 strings each matching `valid`, or what is wrong with it. */
function stringList(value: unknown, valid: (item: string) => boolean, what: string): string | null {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_VALUES)
    return `value must be an array of 1 to ${MAX_VALUES} ${what}`;
  if (!value.every((item) => typeof item === 'string' && valid(item)))
    return `value must be an array of 1 to ${MAX_VALUES} ${what}`;
  return null;
}

/** A BIN prefix of 1 to 6 digits, or a range of two digit strings of equal length (1 to 6) with from <= to. */
export function isBinPattern(item: string): boolean {
  if (BIN_PREFIX.test(item)) return true;
  const range = BIN_RANGE.exec(item);
  return !!range && range[1].length === range[2].length && range[1] <= range[2];
}

/**
 * The condition as the service keeps it, or the message saying what is wrong (the caller names the path
 * `conditions[i]`). Only the documented keys are kept.
 */
export function parseCondition(input: unknown): Condition | string {
  if (!isRecord(input)) return 'each condition must be an object {name, operator, value}';
  const { name, operator, value } = input;
  const extra = Object.keys(input).filter((key) => !['name', 'operator', 'value'].includes(key));
  if (extra.length) return `a condition has only name, operator and value (not ${extra.join(', ')})`;
  const operatorOf = (allowed: string[]): string | null =>
    typeof operator === 'string' && allowed.includes(operator)
      ? null
      : `operator of ${String(name)} must be ${allowed.join(' or ')}`;
  switch (name) {
    case 'amount': {
      const wrong = operatorOf(['is_between']);
      if (wrong) return wrong;
      if (!isRecord(value)) return 'value of amount must be {currency, min?, max?}';
      const { currency, min, max } = value;
      const keys = Object.keys(value).filter((key) => !['currency', 'min', 'max'].includes(key));
      if (keys.length || typeof currency !== 'string' || !CURRENCY.test(currency))
        return 'value of amount must be {currency, min?, max?} with an ISO 4217 currency';
      if ((min !== undefined && !isAmount(min)) || (max !== undefined && !isAmount(max)))
        return 'min and max of amount must be non-negative integers (minor units)';
      if (min === undefined && max === undefined) return 'amount needs at least one of min and max';
      if (min !== undefined && max !== undefined && min > max) return 'min of amount must not exceed max';
      return {
        name,
        operator: 'is_between',
        value: { currency, ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) },
      };
    }
    case 'currency':
    case 'country':
    case 'card_scheme':
    case 'card_bin': {
      const wrong = operatorOf([...SET_OPERATORS]);
      if (wrong) return wrong;
      const [valid, what] = {
        currency: [(v: string) => CURRENCY.test(v), 'ISO 4217 currency codes'],
        country: [(v: string) => COUNTRY.test(v), 'ISO 3166-1 alpha-2 country codes'],
        card_scheme: [(v: string) => SCHEME.test(v), 'card scheme names (visa, mastercard, ...)'],
        card_bin: [
          isBinPattern,
          'BIN prefixes (1 to 6 digits) or ranges "<from>-<to>" of two digit strings of equal length (1 to 6)',
        ],
      }[name] as [(v: string) => boolean, string];
      const bad = stringList(value, valid, what);
      if (bad) return bad;
      return { name, operator: operator as SetOperator, value: [...new Set(value as string[])] };
    }
    case 'payment_source':
    case 'intent': {
      const wrong = operatorOf(['is_one_of']);
      if (wrong) return wrong;
      const allowed: readonly string[] = name === 'intent' ? INTENTS : PAYMENT_SOURCES;
      const bad = stringList(value, (v) => allowed.includes(v), `of ${allowed.join(', ')}`);
      if (bad) return bad;
      return { name, operator: 'is_one_of', value: [...new Set(value as string[])] };
    }
    case 'merchant_initiated': {
      const wrong = operatorOf(['equal_to']);
      if (wrong) return wrong;
      if (typeof value !== 'boolean') return 'value of merchant_initiated must be a boolean';
      return { name, operator: 'equal_to', value };
    }
    case 'metadata': {
      const wrong = operatorOf(['equal_to']);
      if (wrong) return wrong;
      if (
        !isRecord(value) ||
        Object.keys(value).length !== 2 ||
        typeof value.key !== 'string' ||
        typeof value.value !== 'string' ||
        value.key.length === 0 ||
        value.key.length > 100 ||
        value.value.length > 500
      )
        return 'value of metadata must be {key, value}: strings (key 1 to 100 characters, value at most 500)';
      return { name, operator: 'equal_to', value: { key: value.key, value: value.value } };
    }
    default:
      return 'name must be one of amount, currency, country, card_scheme, card_bin, payment_source, merchant_initiated, intent, metadata';
  }
}

/**
 * Whether the card's first digits fall under a prefix or inside a range, comparing at most BIN_DIGITS
 * digits of either: a pattern stored longer (a rule written when 8 were taken) is read as its first 6
 * digits (a range: both bounds), so no rule ever tells a 7th digit of a card.
 */
export function binMatches(bin: string, pattern: string): boolean {
  const card = bin.slice(0, BIN_DIGITS);
  const range = STORED_BIN_RANGE.exec(pattern);
  if (!range) return card.startsWith(pattern.slice(0, BIN_DIGITS));
  const [from, to] = [range[1].slice(0, BIN_DIGITS), range[2].slice(0, BIN_DIGITS)];
  const head = card.slice(0, from.length);
  return head.length === from.length && head >= from && head <= to;
}

function inSet(operator: SetOperator, present: boolean): boolean {
  return operator === 'is_one_of' ? present : !present;
}

/** Whether a transaction's facts meet one condition. */
export function holds(condition: Condition, facts: TransactionFacts): boolean {
  switch (condition.name) {
    case 'amount': {
      const { currency, min, max } = condition.value;
      return (
        facts.currency === currency &&
        (min === undefined || facts.amount >= min) &&
        (max === undefined || facts.amount <= max)
      );
    }
    case 'currency':
      return inSet(condition.operator, condition.value.includes(facts.currency));
    case 'country':
      // A transaction without a country matches only `is_not_one_of`.
      return inSet(condition.operator, facts.country !== null && condition.value.includes(facts.country));
    case 'card_scheme':
      return inSet(condition.operator, facts.scheme !== null && condition.value.includes(facts.scheme));
    case 'card_bin':
      return inSet(
        condition.operator,
        condition.value.some((pattern) => binMatches(facts.bin, pattern)),
      );
    case 'payment_source':
      return condition.value.includes(facts.paymentSource);
    case 'intent':
      return condition.value.includes(facts.intent);
    case 'merchant_initiated':
      return facts.merchantInitiated === condition.value;
    case 'metadata':
      return facts.metadata?.[condition.value.key] === condition.value.value;
  }
}

/** Whether a rule's conditions all hold (none: every transaction). */
export const matches = (conditions: readonly Condition[], facts: TransactionFacts): boolean =>
  conditions.every((condition) => holds(condition, facts));
