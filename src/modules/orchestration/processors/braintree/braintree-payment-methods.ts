import { ProcessorUnavailable, ProcessorUnreachable } from '../processor-calls';
import type { AuthorizeRequest } from '../processor.port';
import { type BraintreeAnswer, refusalCode } from './braintree-api';
import { braintreeTokenizing } from './braintree-network-token';
import type { BRAINTREE_OPERATIONS } from './braintree-operations';

/** One call to Braintree's GraphQL API, as the processor makes it (its credentials and time-out). */
export type BraintreeCaller = <T>(
  operation: keyof typeof BRAINTREE_OPERATIONS,
  variables: Record<string, unknown>,
) => Promise<BraintreeAnswer<T>>;

/** The payment method an authorization charges, or why there is none (a decline or a failure code). */
export type PaymentMethodOutcome =
  { ok: true; paymentMethodId: string } | { ok: false; errorCode: string; declined: boolean };

/**
 * Whether an id is a payment method's id in Braintree's GraphQL API (base64 of `paymentmethod_…`), rather
 * than a legacy payment method token as Braintree's other APIs and its vault exports give them.
 */
export function isGraphQLPaymentMethodId(id: string): boolean {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(id)) return false;
  const decoded = Buffer.from(id, 'base64').toString('utf8');
  return /^paymentmethod_[A-Za-z0-9_]+$/.test(decoded) && Buffer.from(decoded).toString('base64') === id;
}

/**
 * The payment method an authorization charges. A processor's token for the card (a merchant-initiated
 * payment with a stored card that carries one: docs/buyers.md) is the vaulted payment method itself, its
 * legacy token converted first with `idFromLegacyId` (Braintree asks for GraphQL ids); anything else is
 * the card, tokenized as a single-use payment method (`tokenizeCreditCard`, or `tokenizeNetworkToken`).
 * Neither call moves money: a lost answer is as good as none (another connection may be tried).
 * Braintree's validation of the card itself (81715 a number that is not valid, 81716 its length) is a
 * decline, any other refusal a failure.
 */
export async function paymentMethodOf(
  request: AuthorizeRequest,
  call: BraintreeCaller,
): Promise<PaymentMethodOutcome> {
  const stored = request.connectionToken?.token;
  if (stored !== undefined && isGraphQLPaymentMethodId(stored)) return { ok: true, paymentMethodId: stored };
  let answer: BraintreeAnswer<
    Record<string, { paymentMethod?: { id?: string } | null } | string | null | undefined>
  >;
  const tokenizing = stored === undefined ? braintreeTokenizing(request) : undefined;
  try {
    answer = tokenizing
      ? await call(tokenizing.operation, tokenizing.variables)
      : await call('PaymentMethodIdFromLegacyId', { legacyId: stored });
  } catch (error) {
    if (error instanceof ProcessorUnavailable && !(error instanceof ProcessorUnreachable))
      throw new ProcessorUnreachable('Braintree did not answer for the payment method');
    throw error;
  }
  if (!answer.ok) {
    const invalid = answer.legacyCode === '81715' || answer.legacyCode === '81716';
    return invalid
      ? { ok: false, errorCode: 'invalid_card_number', declined: true }
      : { ok: false, errorCode: refusalCode(answer), declined: false };
  }
  const value = tokenizing ? answer.data[tokenizing.field] : answer.data.idFromLegacyId;
  const paymentMethodId = typeof value === 'string' ? value : value?.paymentMethod?.id;
  return paymentMethodId
    ? { ok: true, paymentMethodId }
    : { ok: false, errorCode: 'service_error', declined: false };
}
