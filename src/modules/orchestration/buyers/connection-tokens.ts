import { addFieldError, type FieldErrors } from '../../../common/errors/problem.exception';
import type { ConnectionTokenDto } from './buyer.dto';
import type { ShownConnectionTokenRow } from './connection-tokens.repository';

/** One processor's token on a stored card, as `PUT .../connection-tokens` and the import job give it. */
export interface ConnectionTokenEntry {
  connection_id: string;
  /** The processor's token for the card at that connection: a secret. */
  token: string;
  /** The processor's customer the token belongs to (Stripe's customer id, Adyen's shopper reference). */
  connection_customer?: string | null;
  /** The network's id of the payment that set up the mandate (sent when the card goes elsewhere). */
  network_transaction_id?: string | null;
}

/** What each real rail's token and customer must look like: the forms its API takes (docs/vendors.md). */
const RAIL_FORMS: Record<
  string,
  { token: RegExp; tokenForm: string; customer?: RegExp; customerForm?: string }
> = {
  // A PaymentMethod (or a legacy card or source, which PaymentIntents take as `payment_method` too),
  // attached to a customer: Stripe charges it again only with that customer.
  'stripe-card': {
    token: /^(pm|card|src)_[A-Za-z0-9]{1,250}$/,
    tokenForm: 'a Stripe payment method id (pm_…)',
    customer: /^cus_[A-Za-z0-9]{1,250}$/,
    customerForm: 'the Stripe customer the payment method is attached to (cus_…)',
  },
  // `storedPaymentMethodId` (at most 64 characters) with the `shopperReference` it was stored under.
  'adyen-card': {
    token: /^[A-Za-z0-9_-]{1,64}$/,
    tokenForm: "an Adyen stored payment method id (Adyen's recurringDetailReference)",
    customer: /^.{3,256}$/s,
    customerForm: 'the shopperReference the payment method is stored under (3 to 256 characters)',
  },
  // An `id` source (`02_PaymentRequestIdSource`: `^(src)_(\w{26})$`).
  'checkout-card': { token: /^src_\w{26}$/, tokenForm: 'a Checkout.com source id (src_ and 26 characters)' },
  // The vaulted payment method: its legacy token (the adapter converts it) or its GraphQL id.
  'braintree-card': { token: /^[A-Za-z0-9_=+/-]{1,255}$/, tokenForm: 'a Braintree payment method id' },
};

/**
 * What is wrong with a list of connection tokens, each problem named by its path
 * (`connection_tokens[i].field`): a connection given twice or not the tenant's, and a token or customer
 * that is not of the form the connection's rail takes. Messages never repeat a value.
 */
export function connectionTokenErrors(
  entries: readonly ConnectionTokenEntry[],
  formulas: ReadonlyMap<string, string>,
  errors: FieldErrors = {},
): FieldErrors {
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    const at = (field: string) => `connection_tokens[${i}].${field}`;
    const id = entry.connection_id.toLowerCase();
    const formula = formulas.get(id);
    if (seen.has(id)) addFieldError(errors, at('connection_id'), 'the connection is given twice');
    seen.add(id);
    if (!formula) return addFieldError(errors, at('connection_id'), 'no such connection');
    const form = RAIL_FORMS[formula];
    if (!form) return;
    if (!form.token.test(entry.token))
      addFieldError(errors, at('token'), `${formula} takes ${form.tokenForm}`);
    const customer = entry.connection_customer ?? undefined;
    if (form.customer && (customer === undefined || !form.customer.test(customer)))
      addFieldError(errors, at('connection_customer'), `${formula} needs ${form.customerForm}`);
  });
  return errors;
}

/** All an answer shows of a processor's token: its last four characters (none of a token of 8 or fewer). */
export function lastFourOf(token: string): string {
  return token.length > 8 ? token.slice(-4) : '';
}

/** The masked token as answers show it. */
export const maskedToken = (last4: string): string => `****${last4}`;

/** The masked answer of one token. */
export function connectionTokenDto(row: ShownConnectionTokenRow): ConnectionTokenDto {
  return {
    connection_id: row.connection_id,
    token: maskedToken(row.token_last4),
    connection_customer: row.connection_customer,
    network_transaction_id: row.network_transaction_id,
  };
}
