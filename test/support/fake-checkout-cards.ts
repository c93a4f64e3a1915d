import Ajv, { ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The fake Checkout.com's outcomes (test/support/fake-checkout.ts), its own table rather than Checkout.com's
 * sandbox cards:
 *
 * | Input | Outcome |
 * |---|---|
 * | any card, any amount not below | 201 `Authorized` (`Captured` with `capture: true`), response code 10000, `cvv_check` Y when a CVV is sent |
 * | amount (minor units) equal to one of DECLINE_AMOUNTS' codes, e.g. 20005 | 201 `Declined` with that `response_code` |
 * | card `threeDS` with `3ds.enabled: true` | 202 `Pending` with `_links.redirect`; completeChallenge() decides |
 * | card `invalidNumber` | 422 `request_invalid`, `error_codes: ["card_number_invalid"]` |
 * | CVV `000` | 201 `Declined`, response code 20087, `cvv_check` N |
 */
export const CHECKOUT_CARDS = {
  visa: '4242424242424242',
  mastercard: '5436031030606378',
  /** 3-D Secure challenge when `3ds.enabled` is true. */
  threeDS: '4543474002249996',
  /** Refused by the API (422 card_number_invalid): no payment. */
  invalidNumber: '4000000000000101',
} as const;

/** Amounts that decline with the response code they spell (the response code is the amount). */
export const DECLINE_AMOUNTS: Record<number, string> = {
  20005: 'Declined - Do not honour',
  20051: 'Insufficient funds',
  20014: 'Invalid card number',
  20054: 'Expired card',
  20059: 'Suspected fraud',
  20062: 'Restricted card',
  20091: 'Issuer unavailable',
  30043: 'Stolen card - Pick up',
};

const SPEC = join(__dirname, '..', 'vendor-specs', 'checkout-nas.json');

let validators: Map<string, ValidateFunction> | undefined;

/**
 * Prism ignores the OpenAPI `discriminator` of `PaymentRequest.source`: the fake checks the source against the
 * schema the discriminator maps its `type` to (Checkout.com's own document, with ajv). Answers what is wrong,
 * or [] when the source is valid.
 */
export function sourceViolations(source: unknown): string[] {
  if (!validators) {
    const doc = JSON.parse(readFileSync(SPEC, 'utf8')) as {
      components: { schemas: Record<string, { discriminator?: { mapping: Record<string, string> } }> };
    };
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addSchema({ $id: 'cko', components: { schemas: doc.components.schemas } });
    validators = new Map();
    const mapping = doc.components.schemas.PaymentRequestSource.discriminator!.mapping;
    for (const [type, ref] of Object.entries(mapping))
      validators.set(type, ajv.getSchema(`cko#/components/schemas/${ref.split('/').pop()}`)!);
  }
  const type = (source as { type?: unknown } | null)?.type;
  const validate = typeof type === 'string' ? validators.get(type) : undefined;
  if (!validate) return [`source.type ${JSON.stringify(type)} is not one the document maps`];
  if (validate(source)) return [];
  return (validate.errors ?? []).map((e) => `source${e.instancePath} ${e.message ?? ''}`.trim());
}

/** One action on a payment (`PaymentAction`); `visible` once Checkout.com has processed it. */
export interface FakeAction {
  id: string;
  type: 'Authorization' | 'Capture' | 'Void' | 'Refund';
  amount: number;
  approved: boolean;
  response_code: string;
  reference?: string;
  processed_on: string;
  visible: boolean;
}

export interface FakeCheckoutPayment {
  id: string;
  reference: string;
  amount: number;
  currency: string;
  request: Json;
  status: string;
  approved: boolean;
  responseCode: string;
  schemeId: string;
  actions: FakeAction[];
  captured: number;
  refunded: number;
  /** The 3-D Secure session, while the buyer has not finished it. */
  sessionId?: string;
}

function cardSource(p: FakeCheckoutPayment): Json {
  const s = p.request.source;
  // A network token's DPAN is its `token`.
  const number = String(s.number ?? s.token);
  return {
    type: 'card',
    expiry_month: s.expiry_month,
    expiry_year: s.expiry_year,
    last4: number.slice(-4),
    bin: number.slice(0, 6),
    fingerprint: `fp${number.slice(-4)}`,
    scheme: number.startsWith('4') ? 'Visa' : 'Mastercard',
    ...(s.cvv ? { cvv_check: s.cvv === '000' ? 'N' : 'Y' } : {}),
  };
}

/** `PaymentResponse` (201). */
export function paymentAnswer(p: FakeCheckoutPayment, links: Json): Json {
  const auth = p.actions.find((a) => a.type === 'Authorization')!;
  return {
    id: p.id,
    action_id: auth.id,
    amount: p.amount,
    currency: p.currency,
    approved: p.approved,
    status: p.status === 'Captured' ? 'Authorized' : p.status,
    response_code: p.responseCode,
    processed_on: auth.processed_on,
    reference: p.reference,
    ...(p.approved ? { scheme_id: p.schemeId } : {}),
    source: cardSource(p),
    _links: links,
  };
}

/** `PaymentDetails` (`GET /payments/{id}`). */
export function paymentDetails(p: FakeCheckoutPayment, links: Json): Json {
  return {
    id: p.id,
    requested_on: p.actions.at(-1)?.processed_on ?? new Date().toISOString(),
    amount: p.amount,
    currency: p.currency,
    payment_type: p.request.payment_type ?? 'Regular',
    reference: p.reference,
    approved: p.approved,
    status: p.status,
    ...(p.approved ? { scheme_id: p.schemeId } : {}),
    source: cardSource(p),
    _links: links,
  };
}
