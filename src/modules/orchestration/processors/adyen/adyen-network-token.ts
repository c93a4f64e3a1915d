import type { AuthorizeRequest } from '../processor.port';
import type { NetworkTokenFacts } from '../network-token';

/** Adyen's `brand` of a DPAN's scheme (Adyen names Mastercard `mc`); other schemes go without one. */
export const ADYEN_BRANDS: Record<string, string> = {
  visa: 'visa',
  mastercard: 'mc',
  amex: 'amex',
  discover: 'discover',
};

/**
 * A network token's cryptogram as Adyen's `mpiData` (`ThreeDSecureData` in the v71 document): the token
 * authentication verification value (`tokenAuthenticationVerificationValue`, "the network token
 * cryptogram") and its ECI, sent with `paymentMethod.type` `networkToken`. A wallet's payment is one the
 * cardholder authenticated on the device: `directoryResponse` and `authenticationResponse` `Y`, as
 * Adyen's page on decrypting Apple Pay tokens yourself shows them. A merchant's own network token sends
 * the cryptogram and the ECI only.
 */
export function networkTokenMpiData(
  token: NetworkTokenFacts & { cryptogram: string },
): Record<string, string> {
  return {
    tokenAuthenticationVerificationValue: token.cryptogram,
    ...(token.eci ? { eci: token.eci } : {}),
    ...(token.source === 'merchant' ? {} : { directoryResponse: 'Y', authenticationResponse: 'Y' }),
  };
}

/**
 * A network token without its cryptogram (a later payment with it): a stored credential, `ContAuth`,
 * with the model the payment source says (`CardOnFile` for an ecommerce payment, which without a
 * cryptogram can only be one with the credential on file).
 */
export function storedTokenInteraction(request: AuthorizeRequest): Record<string, string> {
  const recurringProcessingModel =
    request.paymentSource === 'recurring'
      ? 'Subscription'
      : request.merchantInitiated
        ? 'UnscheduledCardOnFile'
        : 'CardOnFile';
  return { shopperInteraction: 'ContAuth', recurringProcessingModel };
}
