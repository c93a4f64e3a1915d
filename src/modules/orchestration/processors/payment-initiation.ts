/**
 * Who starts a payment and how the card was given: the request's fields with their defaults, in one place
 * (the create, its dry run, the rules' facts and the processor's request all read them from here).
 */

export const PAYMENT_SOURCES = ['ecommerce', 'card_on_file', 'recurring'] as const;
export type PaymentSource = (typeof PAYMENT_SOURCES)[number];

/** The payment source of a request that names none and gives its card (`token`). */
export const DEFAULT_PAYMENT_SOURCE: PaymentSource = 'ecommerce';

/** The request's fields this reads (the transaction create body and its dry run's). */
export interface InitiationFields {
  payment_source?: PaymentSource;
  merchant_initiated?: boolean;
  is_subsequent_payment?: boolean;
}

/**
 * The payment source, given or defaulted: a buyer's stored card charged without `token` is `card_on_file`
 * (the buyer is not there to give a card), anything else `ecommerce` (docs/buyers.md).
 */
export function paymentSourceOf(fields: InitiationFields, storedCardOfBuyer = false): PaymentSource {
  return fields.payment_source ?? (storedCardOfBuyer ? 'card_on_file' : DEFAULT_PAYMENT_SOURCE);
}

/** Who starts a payment and whether it follows an earlier one (the request's or a transaction's fields). */
export interface PaymentInitiation {
  paymentSource: PaymentSource;
  merchantInitiated: boolean;
  isSubsequentPayment: boolean;
}

/** Who starts the payment, as the request says, defaults filled in. */
export function initiationOf(fields: InitiationFields): PaymentInitiation {
  return {
    paymentSource: paymentSourceOf(fields),
    merchantInitiated: fields.merchant_initiated ?? false,
    isSubsequentPayment: fields.is_subsequent_payment ?? false,
  };
}

/**
 * A payment the merchant makes with a credential on file, the cardholder absent (`merchant_initiated` with a
 * `card_on_file` or `recurring` source): where a processor's token for a stored card, the mandate it holds,
 * stands in for the card (docs/buyers.md, "Connection tokens").
 */
export const merchantInitiatedOnFile = (p: PaymentInitiation): boolean =>
  p.merchantInitiated && p.paymentSource !== 'ecommerce';
