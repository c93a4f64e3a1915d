import Stripe from 'stripe';
import type { AuthorizeRequest, ConnectionToken, ThreeDSecureData } from '../processor.port';
import type { NetworkTokenFacts } from '../network-token';

/**
 * Who starts the payment, as Stripe takes it. A merchant-initiated payment is `off_session` (the buyer is
 * not there to authenticate: no return URL). A customer-initiated card-on-file or recurring payment
 * that is not a subsequent one asks to keep the card for later off-session payments
 * (`setup_future_usage`). Stripe takes no earlier network transaction id with raw card data (none of
 * the PaymentIntent parameters of the `stripe` package carries one), so `previous_scheme_transaction_id`
 * does not reach Stripe (docs/vendors.md).
 */
export function merchantInitiation(
  request: AuthorizeRequest,
  returnUrl: string,
): Pick<Stripe.PaymentIntentCreateParams, 'off_session' | 'setup_future_usage' | 'return_url'> {
  if (request.merchantInitiated) return { off_session: true };
  const stored = request.paymentSource === 'card_on_file' || request.paymentSource === 'recurring';
  return {
    return_url: returnUrl,
    ...(stored && !request.isSubsequentPayment ? { setup_future_usage: 'off_session' as const } : {}),
  };
}

/** A 3-D Secure authentication made elsewhere, as Stripe takes it (`payment_method_options[card][three_d_secure]`). */
function stripeThreeDSecure(
  data: ThreeDSecureData,
): Stripe.PaymentIntentCreateParams.PaymentMethodOptions.Card.ThreeDSecure {
  const status = data.directoryResponse ?? data.authenticationResponse;
  return {
    version: data.version,
    electronic_commerce_indicator: data.eci,
    cryptogram: data.cavv,
    ...(data.dsTransactionId ? { transaction_id: data.dsTransactionId } : {}),
    ...(status ? { ares_trans_status: status.toUpperCase() } : {}),
  } as Stripe.PaymentIntentCreateParams.PaymentMethodOptions.Card.ThreeDSecure;
}

/**
 * `payment_method_options[card]`: a 3-D Secure authentication made elsewhere, and for a network token
 * the network of its DPAN (`network`). The `stripe` package declares no parameter that carries a network
 * token's cryptogram or ECI (no `network_token` on a card's creation or options; `three_d_secure` is a
 * 3-D Secure result, which requires a directory server transaction id a wallet does not give): the DPAN
 * goes as the card number and the cryptogram stays here (docs/vendors.md).
 */
export function cardOptions(
  request: AuthorizeRequest,
  token: NetworkTokenFacts | undefined,
): Pick<Stripe.PaymentIntentCreateParams, 'payment_method_options'> {
  const network = token?.scheme && STRIPE_NETWORKS.has(token.scheme) ? token.scheme : undefined;
  const threeDSecure = request.threeDSecureData ? stripeThreeDSecure(request.threeDSecureData) : undefined;
  if (!network && !threeDSecure) return {};
  return {
    payment_method_options: {
      card: {
        ...(network ? { network } : {}),
        ...(threeDSecure ? { three_d_secure: threeDSecure } : {}),
      },
    },
  };
}

/** The networks `payment_method_options[card][network]` names (the `stripe` package's `Card.Network`). */
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
 * A processor's token for the card (docs/buyers.md, "Connection tokens"): the merchant's PaymentMethod at
 * Stripe (`payment_method`, `pm_…`) with the customer it is attached to (`customer`), which Stripe asks
 * for to charge it again; no card data goes.
 */
export function storedPaymentMethod(
  stored: ConnectionToken,
): Pick<Stripe.PaymentIntentCreateParams, 'payment_method' | 'customer'> {
  return { payment_method: stored.token, ...(stored.customer ? { customer: stored.customer } : {}) };
}
