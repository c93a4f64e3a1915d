import { randomBytes, randomInt } from 'node:crypto';
import { GraphQLError } from 'graphql';

/**
 * The fake Braintree's merchant: its single-use payment methods, transactions and refunds, and the
 * resolvers (a root value for graphql-js) of the operations it serves. test/support/fake-braintree.ts
 * serves it over HTTP and documents the test cards and amounts it honours.
 */

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Test card numbers (all pass the Luhn check). */
export const BRAINTREE_CARDS = {
  visa: '4111111111111111',
  mastercard: '5555555555554444',
  amex: '378282246310005',
  /** Braintree's sandbox card declined by the processor whatever the amount: 2000 Do Not Honor. */
  processorDeclined: '4000111111111115',
  /** Fails the Luhn check: tokenizeCreditCard refuses it (VALIDATION, legacy code 81715). */
  invalid: '4111111111111112',
} as const;

/** Legacy processor response codes the fake answers (Braintree's texts). */
const PROCESSOR_MESSAGES: Record<string, string> = {
  '2000': 'Do Not Honor',
  '2001': 'Insufficient Funds',
  '2004': 'Expired Card',
  '2005': 'Invalid Credit Card Number',
  '2010': 'Card Issuer Declined CVV',
  '2012': 'Processor Declined - Possible Lost Card',
  '2013': 'Processor Declined - Possible Stolen Card',
  '2014': 'Processor Declined - Fraud Suspected',
  '2015': 'Transaction Not Allowed',
  '2038': 'Processor Declined',
  '2046': 'Declined',
  '2047': 'Call Issuer. Pick Up Card',
  '3000': 'Processor Network Unavailable - Try Again',
};
const HARD_DECLINES = new Set(['2004', '2005', '2012', '2013', '2014', '2015', '2047']);

/** Gateway rejections by amount (the fake's choice of amounts; the reasons are Braintree's enum). */
const GATEWAY_REJECTIONS: Record<string, string> = {
  '5001.00': 'APPLICATION_INCOMPLETE',
  '5001.01': 'RISK_THRESHOLD',
  '5001.02': 'FRAUD',
  '5001.03': 'CVV',
};

/** CVVs with a set answer (Braintree's sandbox: 200 does not match, 201 not verified, 301 issuer not participating). */
const CVV_RESPONSES: Record<string, string> = {
  '200': 'DOES_NOT_MATCH',
  '201': 'NOT_VERIFIED',
  '301': 'ISSUER_DOES_NOT_PARTICIPATE',
};

const EXPONENTS: Record<string, number> = { JPY: 0, KWD: 3 };

const refused = (errorClass: string, message: string, legacyCode?: string): GraphQLError =>
  new GraphQLError(message, { extensions: { errorClass, ...(legacyCode ? { legacyCode } : {}) } });

const luhn = (digits: string): boolean => {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
};

const legacy = () => randomBytes(6).toString('hex').slice(0, 8);
const globalId = (kind: string, legacyId: string) => Buffer.from(`${kind}_${legacyId}`).toString('base64');

export interface FakeCard {
  number: string;
  expirationMonth: string;
  expirationYear: string;
  cvv?: string;
  used: boolean;
  /** A payment method vaulted at Braintree (`vault()`): used again and again, never spent. */
  multiUse?: boolean;
  /** Tokenized with tokenizeNetworkToken: its origin and ECI (never its cryptogram). */
  networkToken?: { origin: string; eci?: string };
}

/** A transaction as the fake keeps it: a GraphQL `Transaction` value, with the fake's own bookkeeping. */
export interface FakeBraintreeTransaction extends Json {
  __typename: 'Transaction';
  id: string;
  legacyId: string;
  orderId: string | null;
  merchantAccountId: string;
  status: string;
  amount: { value: string; currencyCode: string };
  /** The TransactionInput as received (paymentInitiator, threeDSecurePassThrough ...). */
  input: Json;
  cardLast4: string;
  captured: number;
  refunded: number;
  statusHistory: Json[];
  refunds: Json[];
}

export class FakeBraintreeLedger {
  readonly merchantId = 'fake_merchant';
  /** Merchant accounts and their currencies; the first is the default. */
  readonly merchantAccounts = new Map<string, string>([
    ['usd_account', 'USD'],
    ['eur_account', 'EUR'],
    ['jpy_account', 'JPY'],
  ]);
  readonly cards = new Map<string, FakeCard>();
  readonly transactions = new Map<string, FakeBraintreeTransaction>();
  readonly refunds = new Map<string, Json>();

  /** The transactions with this order id, oldest first. */
  byOrderId(orderId: string): FakeBraintreeTransaction[] {
    return [...this.transactions.values()].filter((tx) => tx.orderId === orderId);
  }

  /** A settled sale made at Braintree without us (before a migration): its id, which relay refunds name. */
  seedSettled(minor: number, account = 'usd_account'): string {
    const currency = this.merchantAccounts.get(account)!;
    const legacyId = legacy();
    const tx: FakeBraintreeTransaction = {
      __typename: 'Transaction',
      id: globalId('transaction', legacyId),
      legacyId,
      orderId: 'order-before-the-migration',
      merchantAccountId: account,
      status: 'SETTLED',
      amount: this.amount(minor, currency),
      createdAt: new Date().toISOString(),
      input: {},
      cardLast4: '1111',
      captured: minor,
      refunded: 0,
      statusHistory: [],
      refunds: [],
      paymentMethodSnapshot: null,
    };
    this.transactions.set(tx.id, tx);
    return tx.id;
  }

  /** Braintree's nightly settlement, for one transaction: SUBMITTED_FOR_SETTLEMENT becomes SETTLED. */
  settle(id: string): void {
    const tx = this.transactions.get(id);
    if (tx?.status !== 'SUBMITTED_FOR_SETTLEMENT') throw new Error(`FakeBraintree: ${id} is not submitted`);
    this.move(tx, 'SETTLED', 'SettledEvent');
  }

  private exponent = (currency: string) => EXPONENTS[currency] ?? 2;

  /** An `Amount` in a currency's minor units; a value of the wrong format is Braintree's 81503. */
  private minor(value: unknown, currency: string): number {
    const exponent = this.exponent(currency);
    const match = typeof value === 'string' ? /^([0-9]+)(?:\.([0-9]+))?$/.exec(value) : null;
    if (!match || (match[2] !== undefined && match[2].length !== exponent))
      throw refused('VALIDATION', 'Amount is an invalid format.', '81503');
    return Number(match[1]) * 10 ** exponent + Number(match[2] ?? 0);
  }

  private amount = (minor: number, currency: string) => {
    const exponent = this.exponent(currency);
    const value = exponent ? (minor / 10 ** exponent).toFixed(exponent) : String(minor);
    return { value, currencyCode: currency };
  };

  private move(tx: Json, status: string, typename: string, extra: Json = {}): void {
    tx.status = status;
    tx.statusHistory.push({
      __typename: typename,
      status,
      timestamp: new Date().toISOString(),
      amount: tx.amount,
      ...extra,
    });
  }

  private transaction(id: unknown): FakeBraintreeTransaction {
    const tx = typeof id === 'string' ? this.transactions.get(id) : undefined;
    if (!tx) throw refused('NOT_FOUND', 'An object with this ID was not found.');
    return tx;
  }

  private tokenize(input: Json): Json {
    const card = input.creditCard as Json;
    const number = String(card.number ?? '');
    if (!/^[0-9]{12,19}$/.test(number) || !luhn(number))
      throw refused('VALIDATION', 'Credit card number is invalid.', '81715');
    const month = Number(card.expirationMonth);
    if (!Number.isInteger(month) || month < 1 || month > 12)
      throw refused('VALIDATION', 'Expiration month is invalid.', '81712');
    const id = `tokencc_${legacy()}_${legacy()}`;
    this.cards.set(id, {
      number,
      expirationMonth: String(card.expirationMonth),
      expirationYear: String(card.expirationYear),
      ...(card.cvv ? { cvv: String(card.cvv) } : {}),
      used: false,
    });
    return { paymentMethod: { id, legacyId: id, usage: 'SINGLE_USE' } };
  }

  /**
   * tokenizeNetworkToken: a DPAN with its cryptogram (the schema has checked the input's shape), the same
   * number rules as a card; the payment method remembers where the token came from.
   */
  private tokenizeNetworkToken(input: Json): Json {
    const token = input.networkToken as Json;
    const answer = this.tokenize({ creditCard: { ...token, cryptogram: undefined } });
    const card = this.cards.get(String((answer.paymentMethod as Json).id))!;
    card.networkToken = {
      origin: String((token.originDetails as Json).origin),
      eci: token.eCommerceIndicator === undefined ? undefined : String(token.eCommerceIndicator),
    };
    return answer;
  }

  /**
   * A card vaulted at Braintree before the tests (a merchant's stored payment method): its GraphQL id,
   * which authorizePaymentMethod and chargePaymentMethod take as often as asked.
   */
  vault(card: { number: string; expirationMonth: string; expirationYear: string }): {
    id: string;
    legacyId: string;
  } {
    // Longer than the fake's other legacy ids: a test looks for it in dumps and logs.
    const legacyId = `${legacy()}${legacy()}`;
    const id = globalId('paymentmethod_cc', legacyId);
    this.cards.set(id, { ...card, used: false, multiUse: true });
    this.legacyPaymentMethods.set(legacyId, id);
    return { id, legacyId };
  }

  /** Vaulted payment methods' legacy tokens, to their GraphQL ids (`idFromLegacyId`). */
  readonly legacyPaymentMethods = new Map<string, string>();

  /** authorizePaymentMethod (`charge` false) and chargePaymentMethod: the outcome by card and amount. */
  private transact(input: Json, charge: boolean): Json {
    const card = this.cards.get(String(input.paymentMethodId));
    if (!card) throw refused('NOT_FOUND', 'An object with this ID was not found.');
    if (card.used && !card.multiUse)
      throw refused('VALIDATION', 'Cannot use a payment_method_nonce more than once.', '91564');
    const t = input.transaction as Json;
    const account = (t.merchantAccountId as string | undefined) ?? [...this.merchantAccounts.keys()][0];
    const currency = this.merchantAccounts.get(account);
    if (!currency) throw refused('VALIDATION', 'Merchant account ID is invalid.', '91513');
    const minor = this.minor(t.amount, currency);
    if (minor <= 0) throw refused('VALIDATION', 'Amount must be greater than zero.', '81531');
    card.used = true;
    const legacyId = legacy();
    const tx: FakeBraintreeTransaction = {
      __typename: 'Transaction',
      id: globalId('transaction', legacyId),
      legacyId,
      orderId: (t.orderId as string | undefined) ?? null,
      merchantAccountId: account,
      status: 'AUTHORIZING',
      amount: this.amount(minor, currency),
      createdAt: new Date().toISOString(),
      input: t,
      cardLast4: card.number.slice(-4),
      ...(card.networkToken ? { networkToken: card.networkToken } : {}),
      captured: 0,
      refunded: 0,
      statusHistory: [],
      refunds: [],
      paymentMethodSnapshot: null,
    };
    this.transactions.set(tx.id, tx);
    const value = this.amount(minor, currency).value;
    const major = Math.floor(minor / 10 ** this.exponent(currency));
    const cvvResponse = card.cvv ? (CVV_RESPONSES[card.cvv] ?? 'MATCHES') : 'NOT_PROVIDED';
    const declineCode =
      card.number === BRAINTREE_CARDS.processorDeclined
        ? '2000'
        : major >= 2000 && major <= 2999
          ? String(major)
          : undefined;
    if (GATEWAY_REJECTIONS[value]) {
      this.move(tx, 'GATEWAY_REJECTED', 'GatewayRejectedEvent', {
        gatewayRejectionReason: GATEWAY_REJECTIONS[value],
      });
    } else if (major === 3000) {
      this.move(tx, 'FAILED', 'FailedEvent', {
        processorResponse: { legacyCode: '3000', message: PROCESSOR_MESSAGES['3000'] },
      });
    } else if (declineCode) {
      this.move(tx, 'PROCESSOR_DECLINED', 'ProcessorDeclinedEvent', {
        declineType: HARD_DECLINES.has(declineCode) ? 'HARD' : 'SOFT',
        processorResponse: {
          legacyCode: declineCode,
          message: PROCESSOR_MESSAGES[declineCode] ?? 'Processor Declined',
          cvvResponse,
        },
      });
    } else {
      tx.paymentMethodSnapshot = {
        __typename: 'CreditCardTransactionDetails',
        networkTransactionId: `${randomInt(100_000, 999_999)}${randomInt(100_000_000, 999_999_999)}`,
      };
      this.move(tx, 'AUTHORIZED', 'AuthorizedEvent', {
        processorResponse: {
          legacyCode: '1000',
          message: 'Approved',
          cvvResponse,
          authorizationId: legacy().toUpperCase().slice(0, 6),
        },
      });
      if (charge) {
        tx.captured = minor;
        this.move(tx, 'SUBMITTED_FOR_SETTLEMENT', 'SubmittedForSettlementEvent');
      }
    }
    return { transaction: tx };
  }

  private capture(input: Json): Json {
    const tx = this.transaction(input.transactionId);
    if (tx.status !== 'AUTHORIZED')
      throw refused('VALIDATION', 'Cannot submit for settlement unless status is authorized.', '91507');
    const currency = tx.amount.currencyCode;
    const authorized = this.minor(tx.amount.value, currency);
    const wanted = (input.transaction as Json | undefined)?.amount ?? input.amount;
    const minor = wanted === undefined ? authorized : this.minor(wanted, currency);
    if (minor > authorized) throw refused('VALIDATION', 'Settlement amount is too large.', '91522');
    tx.captured = minor;
    this.move(tx, 'SUBMITTED_FOR_SETTLEMENT', 'SubmittedForSettlementEvent', {
      amount: this.amount(minor, currency),
    });
    return { transaction: tx };
  }

  private newRefund(tx: FakeBraintreeTransaction, minor: number, orderId: string | null): Json {
    const legacyId = legacy();
    const refund = {
      __typename: 'Refund',
      id: globalId('refund', legacyId),
      legacyId,
      status: 'SUBMITTED_FOR_SETTLEMENT',
      orderId,
      amount: this.amount(minor, tx.amount.currencyCode),
      createdAt: new Date().toISOString(),
      refundedTransaction: tx,
      statusHistory: [],
    };
    tx.refunded += minor;
    tx.refunds.push(refund);
    this.refunds.set(refund.id, refund);
    return refund;
  }

  private reverse(input: Json): Json {
    const tx = this.transaction(input.transactionId);
    if (tx.status === 'AUTHORIZED' || tx.status === 'SUBMITTED_FOR_SETTLEMENT') {
      this.move(tx, 'VOIDED', 'VoidedEvent');
      return { reversal: tx };
    }
    if (tx.status === 'SETTLED' || tx.status === 'SETTLING')
      return { reversal: this.newRefund(tx, tx.captured - tx.refunded, null) };
    throw refused('VALIDATION', 'Transaction can only be voided if status is authorized.', '91504');
  }

  private refund(input: Json): Json {
    const tx = this.transaction(input.transactionId);
    if (tx.status !== 'SETTLED' && tx.status !== 'SETTLING')
      throw refused('VALIDATION', 'Cannot refund transaction unless it is settled.', '91506');
    const options = (input.refund ?? {}) as Json;
    const left = tx.captured - tx.refunded;
    const minor = options.amount === undefined ? left : this.minor(options.amount, tx.amount.currencyCode);
    if (minor > left) throw refused('VALIDATION', 'Refund amount is too large.', '91521');
    return { refund: this.newRefund(tx, minor, (options.orderId as string | undefined) ?? null) };
  }

  /** Only `orderId: {is}` is searched (what the adapter sends); other criteria match everything. */
  private search(items: Json[], input: Json, first?: number): Json {
    const is = (input.orderId as Json | undefined)?.is as string | undefined;
    const found = items.filter((item) => is === undefined || item.orderId === is).slice(0, first ?? 50);
    return {
      edges: found.map((node) => ({ cursor: node.id, node })),
      pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
    };
  }

  /** The root value graphql-js executes the schema's operations against. */
  readonly root: Json = {
    ping: () => 'pong',
    viewer: () => ({
      merchant: {
        id: this.merchantId,
        merchantAccounts: ({ input, first }: Json) => {
          const is = ((input as Json | undefined)?.id as Json | undefined)?.is as string | undefined;
          const accounts = [...this.merchantAccounts].filter(([id]) => is === undefined || id === is);
          return {
            edges: accounts.slice(0, first ?? 50).map(([id, currencyCode], i) => ({
              cursor: id,
              node: { id, currencyCode, isDefault: i === 0 && is === undefined, status: 'ACTIVE' },
            })),
            pageInfo: { hasNextPage: false, hasPreviousPage: false },
          };
        },
      },
    }),
    node: ({ id }: Json) => this.transactions.get(id) ?? this.refunds.get(id) ?? null,
    search: () => ({
      transactions: ({ input, first }: Json) => this.search([...this.transactions.values()], input, first),
      refunds: ({ input, first }: Json) => this.search([...this.refunds.values()], input, first),
    }),
    // Braintree checks that a payment method exists (its other types it converts unchecked).
    idFromLegacyId: ({ legacyId, type }: Json) => {
      if (type !== 'PAYMENT_METHOD') return globalId(String(type).toLowerCase(), String(legacyId));
      const id = this.legacyPaymentMethods.get(String(legacyId));
      if (!id) throw refused('NOT_FOUND', 'An object with this ID was not found.');
      return id;
    },
    tokenizeCreditCard: ({ input }: Json) => this.tokenize(input),
    tokenizeNetworkToken: ({ input }: Json) => this.tokenizeNetworkToken(input),
    authorizePaymentMethod: ({ input }: Json) => this.transact(input, false),
    chargePaymentMethod: ({ input }: Json) => this.transact(input, true),
    captureTransaction: ({ input }: Json) => this.capture(input),
    reverseTransaction: ({ input }: Json) => this.reverse(input),
    refundTransaction: ({ input }: Json) => this.refund(input),
  };
}
