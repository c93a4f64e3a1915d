import type { AuthorizeRequest } from '../processor.port';
import { networkTokenOf, withCryptogram } from '../network-token';

/** Braintree's `NetworkTokenOrigin` of a network token's source. */
const ORIGINS = { apple_pay: 'APPLE_PAY', google_pay: 'GOOGLE_PAY', merchant: 'NETWORK_TOKEN' } as const;

/** How an authorization's card becomes a single-use payment method at Braintree. */
export interface BraintreeTokenizing {
  operation: 'TokenizeCreditCard' | 'TokenizeNetworkToken';
  /** The payload's field that holds the payment method. */
  field: 'tokenizeCreditCard' | 'tokenizeNetworkToken';
  variables: { input: Record<string, unknown> };
}

/**
 * A card is tokenized with `tokenizeCreditCard`. A network token with its cryptogram is tokenized with
 * `tokenizeNetworkToken` (`NetworkTokenInput`: the DPAN, its expiry, the cryptogram, the ECI as
 * `eCommerceIndicator` when known, and `originDetails.origin` APPLE_PAY, GOOGLE_PAY or NETWORK_TOKEN);
 * the authorization or charge that follows is the same. A network token without its cryptogram (a later
 * payment) cannot be a `NetworkTokenInput` (its `cryptogram` is required): its DPAN is tokenized as a
 * card number, without a CVV (docs/vendors.md).
 */
export function braintreeTokenizing(request: AuthorizeRequest): BraintreeTokenizing {
  const expirationMonth = String(request.card.expiration_month).padStart(2, '0');
  const expirationYear = String(request.card.expiration_year);
  const token = networkTokenOf(request);
  if (withCryptogram(token))
    return {
      operation: 'TokenizeNetworkToken',
      field: 'tokenizeNetworkToken',
      variables: {
        input: {
          networkToken: {
            number: request.card.number,
            expirationMonth,
            expirationYear,
            cryptogram: token.cryptogram,
            ...(token.eci ? { eCommerceIndicator: token.eci } : {}),
            originDetails: { origin: ORIGINS[token.source] },
          },
        },
      },
    };
  return {
    operation: 'TokenizeCreditCard',
    field: 'tokenizeCreditCard',
    variables: {
      input: {
        creditCard: {
          number: request.card.number,
          expirationMonth,
          expirationYear,
          ...(request.cvc !== undefined && !token ? { cvv: request.cvc } : {}),
        },
      },
    },
  };
}
