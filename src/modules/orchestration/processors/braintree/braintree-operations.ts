/**
 * Every GraphQL document the braintree-card adapter sends to Braintree, in one place: the unit spec
 * validates each of them against Braintree's published schema (deprecated fields refused), and the fake
 * Braintree of the tests executes them against it. Written by hand; nothing is built at run time.
 */

/** What the adapter reads of a transaction, wherever Braintree answers one. */
const TRANSACTION_FIELDS = `
fragment TransactionFields on Transaction {
  id
  status
  orderId
  merchantAccountId
  amount {
    value
    currencyCode
  }
  paymentMethodSnapshot {
    __typename
    ... on CreditCardTransactionDetails {
      networkTransactionId
    }
  }
  statusHistory {
    __typename
    status
    ... on AuthorizedEvent {
      processorResponse {
        legacyCode
        cvvResponse
      }
    }
    ... on ProcessorDeclinedEvent {
      declineType
      processorResponse {
        legacyCode
        cvvResponse
      }
    }
    ... on GatewayRejectedEvent {
      gatewayRejectionReason
    }
    ... on FailedEvent {
      processorResponse {
        legacyCode
      }
    }
  }
}`;

/** What the adapter reads of a refund. */
const REFUND_FIELDS = `
fragment RefundFields on Refund {
  id
  status
  orderId
  amount {
    value
    currencyCode
  }
}`;

/** The credentials check: an authenticated read of the merchant the keys belong to. */
export const VIEWER = `
query Viewer {
  viewer {
    merchant {
      id
    }
  }
}`;

/** The credentials check of a connection that names its merchant account: the account must exist. */
export const VIEWER_WITH_ACCOUNT = `
query ViewerWithAccount($merchantAccountId: String!) {
  viewer {
    merchant {
      id
      merchantAccounts(input: { id: { is: $merchantAccountId } }, first: 1) {
        edges {
          node {
            id
            currencyCode
          }
        }
      }
    }
  }
}`;

/** The card, as a single-use payment method (never vaulted at Braintree). */
export const TOKENIZE_CREDIT_CARD = `
mutation TokenizeCreditCard($input: TokenizeCreditCardInput!) {
  tokenizeCreditCard(input: $input) {
    paymentMethod {
      id
    }
  }
}`;

/**
 * A network token (a wallet's DPAN, or the merchant's own) with its cryptogram, as a single-use payment
 * method: `NetworkTokenInput` (number, expiry, cryptogram, eCommerceIndicator, originDetails).
 */
export const TOKENIZE_NETWORK_TOKEN = `
mutation TokenizeNetworkToken($input: TokenizeNetworkTokenInput!) {
  tokenizeNetworkToken(input: $input) {
    paymentMethod {
      id
    }
  }
}`;

/** A vaulted payment method's GraphQL id from its legacy token (Braintree's other APIs and vault exports). */
export const PAYMENT_METHOD_ID_FROM_LEGACY_ID = `
query PaymentMethodIdFromLegacyId($legacyId: ID!) {
  idFromLegacyId(legacyId: $legacyId, type: PAYMENT_METHOD)
}`;

export const AUTHORIZE_PAYMENT_METHOD = `
mutation AuthorizePaymentMethod($input: AuthorizePaymentMethodInput!) {
  authorizePaymentMethod(input: $input) {
    transaction {
      ...TransactionFields
    }
  }
}
${TRANSACTION_FIELDS}`;

export const CHARGE_PAYMENT_METHOD = `
mutation ChargePaymentMethod($input: ChargePaymentMethodInput!) {
  chargePaymentMethod(input: $input) {
    transaction {
      ...TransactionFields
    }
  }
}
${TRANSACTION_FIELDS}`;

export const CAPTURE_TRANSACTION = `
mutation CaptureTransaction($input: CaptureTransactionInput!) {
  captureTransaction(input: $input) {
    transaction {
      ...TransactionFields
    }
  }
}
${TRANSACTION_FIELDS}`;

/** A void before settlement (a `Transaction`, VOIDED), a refund after it (a `Refund`). */
export const REVERSE_TRANSACTION = `
mutation ReverseTransaction($input: ReverseTransactionInput!) {
  reverseTransaction(input: $input) {
    reversal {
      __typename
      ... on Transaction {
        id
        status
      }
      ... on Refund {
        id
        status
      }
    }
  }
}`;

export const REFUND_TRANSACTION = `
mutation RefundTransaction($input: RefundTransactionInput!) {
  refundTransaction(input: $input) {
    refund {
      ...RefundFields
    }
  }
}
${REFUND_FIELDS}`;

/** The transactions made with an order id: how an attempt whose answer was lost is found (no idempotency key). */
export const TRANSACTIONS_BY_ORDER_ID = `
query TransactionsByOrderId($orderId: String!) {
  search {
    transactions(input: { orderId: { is: $orderId } }, first: 5) {
      edges {
        node {
          ...TransactionFields
        }
      }
    }
  }
}
${TRANSACTION_FIELDS}`;

export const TRANSACTION_BY_ID = `
query TransactionById($id: ID!) {
  node(id: $id) {
    __typename
    ... on Transaction {
      ...TransactionFields
    }
  }
}
${TRANSACTION_FIELDS}`;

export const REFUNDS_BY_ORDER_ID = `
query RefundsByOrderId($orderId: String!) {
  search {
    refunds(input: { orderId: { is: $orderId } }, first: 5) {
      edges {
        node {
          ...RefundFields
        }
      }
    }
  }
}
${REFUND_FIELDS}`;

/** Every document, by operation name (the unit spec validates them all). */
export const BRAINTREE_OPERATIONS = {
  Viewer: VIEWER,
  ViewerWithAccount: VIEWER_WITH_ACCOUNT,
  TokenizeCreditCard: TOKENIZE_CREDIT_CARD,
  TokenizeNetworkToken: TOKENIZE_NETWORK_TOKEN,
  PaymentMethodIdFromLegacyId: PAYMENT_METHOD_ID_FROM_LEGACY_ID,
  AuthorizePaymentMethod: AUTHORIZE_PAYMENT_METHOD,
  ChargePaymentMethod: CHARGE_PAYMENT_METHOD,
  CaptureTransaction: CAPTURE_TRANSACTION,
  ReverseTransaction: REVERSE_TRANSACTION,
  RefundTransaction: REFUND_TRANSACTION,
  TransactionsByOrderId: TRANSACTIONS_BY_ORDER_ID,
  TransactionById: TRANSACTION_BY_ID,
  RefundsByOrderId: REFUNDS_BY_ORDER_ID,
} as const;
