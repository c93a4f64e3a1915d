import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import { ValidationException } from '../../../common/errors/domain.exception';
import type { UsableToken } from '../../tokens/tokens.service';
import type { NetworkTokenData } from '../../tokens/data/validate-data';
import type { NetworkTokenDetails, ThreeDSecureData } from '../processors/processor.port';
import type { UsableConnection } from '../connections/connections.service';
import { schemeOf } from '../formulas/card-schemes';
import { supports } from '../formulas/formulas';
import type { CreateTransactionDto } from './transaction.dto';
import type { PaymentMethodSummary } from './transactions.repository';

/** What the connection refuses of a payment request (inactive, currency, country, unsupported features). */
export function checkAgainstConnection(
  connection: UsableConnection,
  body: CreateTransactionDto,
  errors: FieldErrors,
  tokenType?: string,
): void {
  const { row, formula } = connection;
  if (tokenType === 'network_token' && !supports(formula, 'network_tokens'))
    addFieldError(errors, 'token', `${formula.id} does not take network tokens`);
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
  if (body.three_d_secure_data !== undefined && body.three_d_secure_data !== null)
    if (!supports(formula, 'three_d_secure_pass_through'))
      addFieldError(
        errors,
        'three_d_secure_data',
        `${formula.id} does not take a 3-D Secure authentication made elsewhere`,
      );
}

const THREE_DS_FIELDS = [
  'version',
  'eci',
  'cavv',
  'directory_response',
  'authentication_response',
  'ds_transaction_id',
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `three_d_secure_data` checked, every bad field named (`three_d_secure_data.eci`, ...); absent: null.
 * Messages never repeat a value: the cryptogram is a secret.
 */
export function threeDSecureData(value: unknown, errors: FieldErrors): ThreeDSecureData | null {
  if (value === undefined || value === null) return null;
  const at = (field: string) => `three_d_secure_data.${field}`;
  if (typeof value !== 'object' || Array.isArray(value)) {
    addFieldError(
      errors,
      'three_d_secure_data',
      'three_d_secure_data must be an object {version, eci, cavv, ...}',
    );
    return null;
  }
  const data = value as Record<string, unknown>;
  const before = Object.keys(errors).length;
  for (const key of Object.keys(data))
    if (!THREE_DS_FIELDS.includes(key))
      addFieldError(errors, 'three_d_secure_data', 'unknown field in three_d_secure_data');
  const check = (field: string, valid: (v: string) => boolean, message: string, required: boolean) => {
    const v = data[field];
    if (v === undefined && !required) return;
    if (typeof v !== 'string' || !valid(v)) addFieldError(errors, at(field), message);
  };
  check(
    'version',
    (v) => /^(2\.[0-9]{1,2}\.[0-9]{1,2}|1\.0\.2)$/.test(v),
    'version must be 2.x.y or 1.0.2',
    true,
  );
  check('eci', (v) => /^[0-9]{2}$/.test(v), 'eci must be two digits', true);
  check('cavv', (v) => v.length >= 1 && v.length <= 64, 'cavv must be 1 to 64 characters', true);
  check('directory_response', (v) => /^[A-Za-z]$/.test(v), 'directory_response must be one letter', false);
  check(
    'authentication_response',
    (v) => /^[A-Za-z]$/.test(v),
    'authentication_response must be one letter',
    false,
  );
  check('ds_transaction_id', (v) => UUID.test(v), 'ds_transaction_id must be a uuid', false);
  if (Object.keys(errors).length > before) return null;
  return {
    version: data.version as string,
    eci: data.eci as string,
    cavv: data.cavv as string,
    ...(data.directory_response !== undefined
      ? { directoryResponse: data.directory_response as string }
      : {}),
    ...(data.authentication_response !== undefined
      ? { authenticationResponse: data.authentication_response as string }
      : {}),
    ...(data.ds_transaction_id !== undefined ? { dsTransactionId: data.ds_transaction_id as string } : {}),
  };
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
  const network =
    token.type === 'network_token'
      ? { method: 'network_token' as const, source: (token.data as NetworkTokenData).source }
      : {};
  return {
    ...network,
    scheme: schemeOf(token.card_brand),
    label: mask.number.slice(-4),
    expiration_date: `${String(mask.expiration_month).padStart(2, '0')}/${String(mask.expiration_year % 100).padStart(2, '0')}`,
    fingerprint: token.fingerprint,
  };
}

/** What a processor is told of a network token besides its DPAN: where it comes from, its ECI and scheme, the cryptogram when sent. */
export function networkTokenOf(token: UsableToken, cryptogram: string | undefined): NetworkTokenDetails {
  const data = token.data as NetworkTokenData;
  return {
    source: data.source,
    scheme: data.scheme ?? schemeOf(token.card_brand),
    ...(data.eci !== undefined ? { eci: data.eci } : {}),
    ...(cryptogram !== undefined ? { cryptogram } : {}),
  };
}
