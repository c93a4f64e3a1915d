/**
 * What the fakes check of a network token's form, beyond the vendors' documents (Prism validates Adyen's
 * and Checkout.com's requests, the Braintree fake executes its schema, the Checkout.com fake validates the
 * `source` against its discriminated schema). Each function answers what is wrong with one request body,
 * or [] when nothing is; the fakes keep the answers in `formViolations` and the suites expect it empty.
 */

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Adyen (`POST /payments`): a `networkToken` payment method carries no CVC; the token authentication
 * verification value goes with a `networkToken` only; a `networkToken` paid without it is a stored
 * credential (`ContAuth`), and one paid with it an `Ecommerce` payment.
 */
export function adyenFormViolations(body: Json): string[] {
  const method = (body.paymentMethod ?? {}) as Json;
  const tavv = (body.mpiData as Json | undefined)?.tokenAuthenticationVerificationValue;
  const problems: string[] = [];
  if (method.type === 'networkToken' && method.cvc !== undefined) problems.push('networkToken with a cvc');
  if (tavv !== undefined && method.type !== 'networkToken')
    problems.push(`tokenAuthenticationVerificationValue with paymentMethod.type ${String(method.type)}`);
  if (method.type === 'networkToken' && tavv === undefined && body.shopperInteraction !== 'ContAuth')
    problems.push('networkToken without a cryptogram outside ContAuth');
  if (method.type === 'networkToken' && tavv !== undefined && body.shopperInteraction !== 'Ecommerce')
    problems.push('networkToken with a cryptogram outside Ecommerce');
  return problems;
}

/** The parameters of a card's creation and of `payment_method_options[card]` the `stripe` package declares. */
const STRIPE_CARD_DATA = new Set(['number', 'exp_month', 'exp_year', 'cvc', 'networks', 'token']);
const STRIPE_CARD_OPTIONS = new Set([
  'capture_method',
  'cvc_token',
  'installments',
  'mandate_options',
  'moto',
  'network',
  'request_extended_authorization',
  'request_incremental_authorization',
  'request_multicapture',
  'request_overcapture',
  'request_three_d_secure',
  'require_cvc_recollection',
  'setup_future_usage',
  'statement_descriptor_suffix_kana',
  'statement_descriptor_suffix_kanji',
  'three_d_secure',
]);
const STRIPE_NETWORKS = new Set([
  'amex',
  'cartes_bancaires',
  'diners',
  'discover',
  'jcb',
  'mastercard',
  'unionpay',
  'visa',
]);

/**
 * Stripe (`POST /v1/payment_intents`, form-encoded): only parameters the `stripe` package declares under
 * `payment_method_data[card]` and `payment_method_options[card]` (it declares no network token), a
 * `network` Stripe knows, and a cryptogram nowhere but in a 3-D Secure result.
 */
export function stripeFormViolations(body: Json): string[] {
  const card = ((body.payment_method_data as Json | undefined)?.card ?? {}) as Json;
  const options = ((body.payment_method_options as Json | undefined)?.card ?? {}) as Json;
  const problems = [
    ...Object.keys(card)
      .filter((k) => !STRIPE_CARD_DATA.has(k))
      .map((k) => `payment_method_data[card][${k}] is not a parameter`),
    ...Object.keys(options)
      .filter((k) => !STRIPE_CARD_OPTIONS.has(k))
      .map((k) => `payment_method_options[card][${k}] is not a parameter`),
  ];
  if (options.network !== undefined && !STRIPE_NETWORKS.has(String(options.network)))
    problems.push(`payment_method_options[card][network] ${String(options.network)}`);
  const { three_d_secure: threeDSecure, ...rest } = options;
  void threeDSecure;
  if (/cryptogram/.test(JSON.stringify({ ...body, payment_method_options: { card: rest } })))
    problems.push('a cryptogram outside payment_method_options[card][three_d_secure]');
  return problems;
}

/**
 * Checkout.com (`POST /payments`): a `network_token` source's `token_type` matches the token's network
 * (`vts` a Visa DPAN, `mdes` a Mastercard one; the wallets' for any); a `card` source has no cryptogram.
 */
export function checkoutFormViolations(body: Json): string[] {
  const source = (body.source ?? {}) as Json;
  const problems: string[] = [];
  if (source.type === 'network_token') {
    const token = String(source.token ?? '');
    if (source.token_type === 'vts' && !token.startsWith('4'))
      problems.push('vts with a DPAN that is not Visa');
    if (source.token_type === 'mdes' && !/^(5[1-5]|2[2-7])/.test(token))
      problems.push('mdes with a DPAN that is not Mastercard');
    if (source.cvv !== undefined) problems.push('network_token with a cvv');
  }
  if (source.type === 'card' && /cryptogram/.test(JSON.stringify(source)))
    problems.push('card with a cryptogram');
  return problems;
}
