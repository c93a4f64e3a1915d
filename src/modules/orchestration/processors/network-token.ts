import { brandOf, schemeOf } from '../../tokens/data/card-rules';
import type { AuthorizeRequest, NetworkTokenDetails } from './processor.port';

/**
 * What every vendor adapter needs to know of a network token (docs/vendors.md, "Network tokens"): the
 * token's facts, with the DPAN's scheme filled in from its leading digits when the token did not name it.
 * The cryptogram goes to the vendor in the request and nowhere else: never logged, never in an error.
 */
export interface NetworkTokenFacts extends NetworkTokenDetails {
  scheme: string | null;
}

/** The request's network token (its scheme known when the DPAN's digits tell it), or undefined for a card. */
export function networkTokenOf(request: AuthorizeRequest): NetworkTokenFacts | undefined {
  const token = request.networkToken;
  if (!token) return undefined;
  return { ...token, scheme: token.scheme ?? schemeOf(brandOf(request.card.number)?.type) };
}

/**
 * A network token that comes with its one-time cryptogram: the first authorization with the token. Later
 * ones (the cryptogram spent, or a merchant-initiated payment) carry none.
 */
export const withCryptogram = (
  token: NetworkTokenFacts | undefined,
): token is NetworkTokenFacts & { cryptogram: string } =>
  token !== undefined && typeof token.cryptogram === 'string' && token.cryptogram !== '';

/**
 * The ECI to send with a cryptogram when the wallet gave none (Apple Pay leaves it out for some networks,
 * Mastercard's among them): `02` for Mastercard (its value for a payment whose cryptogram authenticates
 * the cardholder), `07` otherwise (an electronic commerce payment). Only for vendors that require one.
 */
export const defaultEci = (scheme: string | null): string => (scheme === 'mastercard' ? '02' : '07');
