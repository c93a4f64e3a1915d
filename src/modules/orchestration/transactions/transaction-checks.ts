import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import { ValidationException } from '../../../common/errors/domain.exception';
import type { UsableToken } from '../../tokens/tokens.service';
import type { UsableConnection } from '../connections/connections.service';
import { supports } from '../formulas/formulas';
import type { CreateTransactionDto } from './transaction.dto';
import type { PaymentMethodSummary } from './transactions.repository';

const SCHEMES: Record<string, string> = { 'american-express': 'amex', 'diners-club': 'diners-club' };

/** What the connection refuses of a payment request (inactive, currency, country, unsupported features). */
export function checkAgainstConnection(
  connection: UsableConnection,
  body: CreateTransactionDto,
  errors: FieldErrors,
): void {
  const { row, formula } = connection;
  if (!row.active) addFieldError(errors, 'connection_id', 'the connection is not active');
  else if (row.status !== 'available')
    addFieldError(errors, 'connection_id', `the connection is ${row.status}, not available`);
  if (!row.acceptedCurrencies.includes(body.currency))
    addFieldError(errors, 'currency', `the connection does not accept ${body.currency}`);
  if (body.country !== undefined && !row.acceptedCountries.includes(body.country))
    addFieldError(errors, 'country', `the connection does not accept ${body.country}`);
  if (body.amount === 0 && !supports(formula, 'zero_auth'))
    addFieldError(errors, 'amount', `${formula.id} does not support zero-amount authorization`);
  if ((body.intent ?? 'authorize') === 'authorize' && !supports(formula, 'delayed_capture'))
    addFieldError(errors, 'intent', `${formula.id} does not support delayed capture`);
}

export function checkMetadata(metadata: unknown, errors: FieldErrors): void {
  if (metadata === undefined || metadata === null) return;
  const entries = Object.entries(metadata as Record<string, unknown>);
  if (entries.length > 20) addFieldError(errors, 'metadata', 'metadata holds at most 20 values');
  for (const [key, value] of entries)
    if (typeof value !== 'string' || value.length > 500)
      addFieldError(errors, `metadata.${key}`, 'metadata values must be strings of at most 500 characters');
}

/** `three_d_session_id` as a string or an object with a string `id`; absent: null. */
export function threeDSessionId(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && value.length > 0 && value.length <= 200) return value;
  if (typeof value === 'object' && !Array.isArray(value)) {
    const id = (value as { id?: unknown }).id;
    if (typeof id === 'string' && id.length > 0 && id.length <= 200) return id;
  }
  throw ValidationException.field(
    'three_d_session_id',
    'three_d_session_id must be a string or an object with a string id',
  );
}

/** The card as a transaction shows it: scheme, last four digits, expiry and fingerprint. */
export function paymentMethodOf(token: UsableToken): PaymentMethodSummary {
  const mask = token.mask as { number: string; expiration_month: number; expiration_year: number };
  return {
    scheme: token.card_brand ? (SCHEMES[token.card_brand] ?? token.card_brand) : null,
    label: mask.number.slice(-4),
    expiration_date: `${String(mask.expiration_month).padStart(2, '0')}/${String(mask.expiration_year % 100).padStart(2, '0')}`,
    fingerprint: token.fingerprint,
  };
}
