import { WalletError } from '../wallet-error';
import { isObject, millisecondsDate, parseJsonObject } from './google-pay-encoding';

/** The card of a decrypted `ECv2` message (`paymentMethod` `CARD`). */
export interface GooglePayPaymentMethodDetails {
  /** The card number (`PAN_ONLY`) or the device PAN (`CRYPTOGRAM_3DS`), digits only. */
  pan: string;
  expirationMonth: number;
  expirationYear: number;
  authMethod: 'PAN_ONLY' | 'CRYPTOGRAM_3DS';
  /** The one-time 3-D Secure cryptogram (`CRYPTOGRAM_3DS` only, where it is required). */
  cryptogram?: string;
  /** The ECI, when Google sends one (`CRYPTOGRAM_3DS` only; not always present). */
  eciIndicator?: string;
}

/** A verified, decrypted and unexpired Google Pay `ECv2` message. */
export interface GooglePayMessage {
  /** The recipient key that decrypted it. */
  keyId: string;
  /** Google's id of the message (one per payment credential handed out: replays share it). */
  messageId: string;
  messageExpiration: Date;
  /** `CARD` (the only method Google defines). */
  paymentMethod: string;
  paymentMethodDetails: GooglePayPaymentMethodDetails;
}

const AUTH_METHODS = new Set(['PAN_ONLY', 'CRYPTOGRAM_3DS']);

/**
 * The decrypted plaintext: a JSON object with `messageExpiration`, `messageId`, `paymentMethod` and
 * `paymentMethodDetails` (other fields, such as `gatewayMerchantId`, are ignored: the signature already
 * bound the recipient). Expiry is judged once the expiration itself is well formed; any other field
 * missing or of the wrong shape is malformed.
 */
export function parseGooglePayMessage(plaintext: Buffer, now: Date): Omit<GooglePayMessage, 'keyId'> {
  const malformed = () => new WalletError('wallet_payload_invalid');
  const text = decodeUtf8(plaintext);
  plaintext.fill(0);
  const message = text === null ? null : parseJsonObject(text);
  if (!message) throw malformed();
  const messageExpiration = millisecondsDate(message.messageExpiration);
  if (!messageExpiration) throw malformed();
  if (messageExpiration.getTime() <= now.getTime()) throw new WalletError('wallet_expired');
  const { messageId, paymentMethod, paymentMethodDetails: details } = message;
  if (typeof messageId !== 'string' || messageId.length === 0) throw malformed();
  if (paymentMethod !== 'CARD' || !isObject(details)) throw malformed();
  const { pan, expirationMonth, expirationYear, authMethod, cryptogram, eciIndicator } = details;
  if (typeof pan !== 'string' || !/^\d{12,19}$/.test(pan)) throw malformed();
  if (
    !Number.isInteger(expirationMonth) ||
    (expirationMonth as number) < 1 ||
    (expirationMonth as number) > 12
  )
    throw malformed();
  if (
    !Number.isInteger(expirationYear) ||
    (expirationYear as number) < 1000 ||
    (expirationYear as number) > 9999
  )
    throw malformed();
  if (typeof authMethod !== 'string' || !AUTH_METHODS.has(authMethod)) throw malformed();
  const card: GooglePayPaymentMethodDetails = {
    pan,
    expirationMonth: expirationMonth as number,
    expirationYear: expirationYear as number,
    authMethod: authMethod as GooglePayPaymentMethodDetails['authMethod'],
  };
  if (authMethod === 'CRYPTOGRAM_3DS') {
    if (typeof cryptogram !== 'string' || cryptogram.length === 0) throw malformed();
    card.cryptogram = cryptogram;
    if (eciIndicator !== undefined && eciIndicator !== null) {
      if (typeof eciIndicator !== 'string' || !/^[0-9A-Za-z]{1,4}$/.test(eciIndicator)) throw malformed();
      card.eciIndicator = eciIndicator;
    }
  }
  return { messageId, messageExpiration, paymentMethod, paymentMethodDetails: card };
}

/** The text of UTF-8 bytes, or null when they are not UTF-8. */
function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
