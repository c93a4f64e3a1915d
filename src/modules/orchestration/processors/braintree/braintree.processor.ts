import { ProcessorUnavailable, ProcessorUnreachable } from '../processor-calls';
import { toReconciliationId } from '../reconciliation';
import type {
  AuthorizeRequest,
  AuthorizeResult,
  CaptureRequest,
  ChallengeRequest,
  Credentials,
  OperationRequest,
  OperationResult,
  PollRequest,
  ProcessorPort,
  RefundRequest,
  ThreeDSecureData,
  VendorSettings,
  VerificationResult,
} from '../processor.port';
import { attemptReference, firstStoredCredentialPayment } from '../processor.port';
import {
  BRAINTREE_TIMEOUT_MS,
  BraintreeAnswer,
  braintreeCall,
  braintreeUrl,
  refusalCode,
} from './braintree-api';
import * as ops from './braintree-operations';
import { paymentMethodOf } from './braintree-payment-methods';
import {
  braintreeAmount,
  BraintreeRefund,
  BraintreeTransaction,
  isApproved,
  isCaptured,
  refundResult,
  transactionResult,
} from './braintree-results';

/** How long a whole authorization (tokenize, authorize, and a search when the answer was lost) may take. */
const AUTHORIZE_BUDGET_MS = 26_000;
/** What the authorizing call leaves of the budget for the search that follows a lost answer. */
const SEARCH_RESERVE_MS = 4_000;

/**
 * Braintree's `paymentInitiator` for a payment: a merchant-initiated one is `RECURRING` (a subscription)
 * or `UNSCHEDULED` (a card on file); the first customer-initiated payment of a subscription is
 * `RECURRING_FIRST`; a payment the customer makes otherwise carries none (Braintree's rule).
 */
function paymentInitiator(request: AuthorizeRequest): string | undefined {
  if (request.merchantInitiated) return request.paymentSource === 'recurring' ? 'RECURRING' : 'UNSCHEDULED';
  if (request.paymentSource === 'recurring' && firstStoredCredentialPayment(request))
    return 'RECURRING_FIRST';
  return undefined;
}

/** `three_d_secure_data` as Braintree's `threeDSecurePassThrough` (a merchant-performed authentication). */
function passThrough(data: ThreeDSecureData): Record<string, string> {
  return {
    eciFlag: data.eci,
    cavv: data.cavv,
    version: data.version,
    ...(data.dsTransactionId ? { directoryServerTransactionId: data.dsTransactionId } : {}),
    ...(data.directoryResponse ? { directoryServerResponse: data.directoryResponse.toUpperCase() } : {}),
    ...(data.authenticationResponse
      ? { authenticationResponse: data.authenticationResponse.toUpperCase() }
      : {}),
  };
}

/** A refund's order id at Braintree: the transaction's reconciliation id and the refund's. */
export const braintreeRefundOrderId = (reconciliationId: string, refundId: string): string =>
  `${reconciliationId}.${toReconciliationId(refundId)}`;

interface ViewedMerchant {
  id?: string;
  merchantAccounts?: { edges?: ({ node?: { id?: string } | null } | null)[] | null } | null;
}
type TransactionPayload = Record<string, { transaction?: BraintreeTransaction | null } | null>;
type SearchPayload<T> = { search?: Record<string, { edges?: ({ node?: T | null } | null)[] } | null> | null };

/**
 * braintree-card against Braintree's GraphQL API (sandbox for `test`, production for `live`), over plain
 * HTTP. An authorization tokenizes the card as a single-use payment method (`tokenizeCreditCard`; the
 * card is never vaulted at Braintree), then authorizes or charges it with the attempt's reference as
 * `orderId`. Braintree takes no idempotency key: when an authorizing call's answer is lost (a time-out,
 * a 5xx, a dropped connection), the adapter looks the attempt up by its `orderId` before anything else
 * happens (here at once, and in the settlement job later), so that a payment is never made twice; an
 * attempt is never sent twice. Captures, voids and refunds answer synchronously. Card data, CVCs and
 * keys never leave this class except in the requests to Braintree.
 */
export class BraintreeProcessor implements ProcessorPort {
  static readonly formula = 'braintree-card';
  readonly formulaId = BraintreeProcessor.formula;
  /** How long a call may take (tests shorten it). */
  timeoutMs = BRAINTREE_TIMEOUT_MS;
  private readonly url: string;

  constructor(settings: VendorSettings) {
    this.url = braintreeUrl(settings.baseUrl, settings.environment);
  }

  private call<T>(
    credentials: Credentials,
    operation: keyof typeof ops.BRAINTREE_OPERATIONS,
    variables: Record<string, unknown>,
    timeoutMs = this.timeoutMs,
  ): Promise<BraintreeAnswer<T>> {
    const query = ops.BRAINTREE_OPERATIONS[operation];
    return braintreeCall<T>(this.url, credentials, operation, query, variables, timeoutMs);
  }

  async verifyCredentials(credentials: Credentials): Promise<VerificationResult> {
    const account = credentials.merchant_account_id;
    const answer = await this.call<{ viewer?: { merchant?: ViewedMerchant | null } | null }>(
      credentials,
      account ? 'ViewerWithAccount' : 'Viewer',
      account ? { merchantAccountId: account } : {},
    );
    if (!answer.ok) {
      if (answer.status === 401 || answer.errorClass === 'AUTHENTICATION')
        return { ok: false, reason: 'Braintree refused the public and private keys (401)' };
      if (answer.status === 403 || answer.errorClass === 'AUTHORIZATION')
        return { ok: false, reason: 'the keys may not read the merchant (403)' };
      return { ok: false, reason: `Braintree refused the credentials check (${refusalCode(answer)})` };
    }
    const merchant = answer.data.viewer?.merchant;
    if (credentials.merchant_id && merchant?.id && merchant.id !== credentials.merchant_id)
      return { ok: false, reason: 'the keys belong to another Braintree merchant than merchant_id' };
    const accounts = merchant?.merchantAccounts?.edges ?? [];
    if (account && !accounts.some((edge) => edge?.node?.id === account))
      return { ok: false, reason: 'the merchant has no merchant account merchant_account_id' };
    return { ok: true };
  }

  async authorize(request: AuthorizeRequest): Promise<AuthorizeResult> {
    const deadline = Date.now() + AUTHORIZE_BUDGET_MS;
    // A network token carries no CVC (its cryptogram stands for it).
    const cvcSent = request.cvc !== undefined && !request.networkToken;
    const failed = (errorCode: string, declined = false): AuthorizeResult => ({
      outcome: declined ? 'declined' : 'failed',
      captured: false,
      connectionTransactionId: null,
      schemeTransactionId: null,
      authResponseCode: null,
      cvvResponseCode: cvcSent ? 'unavailable' : 'not_provided',
      errorCode,
      threeDSecure: null,
    });
    // Braintree verifies a card (a zero-amount check) only once it is vaulted there, which this adapter
    // never does: an amount of 0 is refused before any call.
    if (request.amount === 0) return failed('zero_amount_unsupported');
    // The merchant's vaulted payment method for the card (docs/buyers.md, "Connection tokens"), or the
    // card tokenized as a single-use payment method.
    const method = await paymentMethodOf(request, (operation, variables) =>
      this.call(request.credentials, operation, variables),
    );
    if (!method.ok) return failed(method.errorCode, method.declined);
    const paymentMethodId = method.paymentMethodId;

    const orderId = attemptReference(request);
    const initiator = paymentInitiator(request);
    const input = {
      paymentMethodId,
      transaction: {
        amount: braintreeAmount(request.amount, request.currency),
        orderId,
        ...(request.credentials.merchant_account_id
          ? { merchantAccountId: request.credentials.merchant_account_id }
          : {}),
        ...(initiator ? { paymentInitiator: initiator } : {}),
        ...(request.threeDSecureData
          ? { threeDSecurePassThrough: passThrough(request.threeDSecureData) }
          : {}),
      },
    };
    const capture = request.intent === 'capture';
    let answer: BraintreeAnswer<TransactionPayload>;
    try {
      answer = await this.call<TransactionPayload>(
        request.credentials,
        capture ? 'ChargePaymentMethod' : 'AuthorizePaymentMethod',
        { input },
        Math.min(this.timeoutMs, deadline - Date.now() - SEARCH_RESERVE_MS),
      );
    } catch (error) {
      if (error instanceof ProcessorUnreachable || !(error instanceof ProcessorUnavailable)) throw error;
      // The outcome is unknown: what Braintree holds under the attempt's order id decides, else settlement.
      const found = await this.findByOrderId(
        request.credentials,
        orderId,
        Math.min(this.timeoutMs, deadline - Date.now()),
      ).catch(() => undefined);
      if (!found) throw error;
      return transactionResult(found, cvcSent);
    }
    if (!answer.ok) return failed(refusalCode(answer));
    const tx = answer.data[capture ? 'chargePaymentMethod' : 'authorizePaymentMethod']?.transaction;
    if (!tx) return failed('service_error');
    return transactionResult(tx, cvcSent);
  }

  /** This adapter starts no challenge (Braintree runs 3-D Secure in its client SDK): nothing to complete. */
  completeChallenge(request: ChallengeRequest): Promise<AuthorizeResult> {
    return Promise.resolve({
      outcome: 'declined',
      captured: false,
      connectionTransactionId: request.connectionTransactionId || null,
      schemeTransactionId: null,
      authResponseCode: null,
      cvvResponseCode: 'not_provided',
      errorCode: 'three_d_secure_declined',
      threeDSecure: null,
    });
  }

  /** `captureTransaction`, partial with `transaction.amount`: submitted for settlement at once. */
  async capture(request: CaptureRequest): Promise<OperationResult> {
    const answer = await this.call<TransactionPayload>(request.credentials, 'CaptureTransaction', {
      input: {
        transactionId: request.connectionTransactionId,
        transaction: { amount: braintreeAmount(request.amount, request.currency) },
      },
    });
    if (!answer.ok) return { status: 'failed', errorCode: refusalCode(answer) };
    const tx = answer.data.captureTransaction?.transaction;
    if (tx && isCaptured(tx.status)) return { status: 'succeeded', vendorId: tx.id };
    return { status: 'failed', errorCode: 'capture_failed' };
  }

  /**
   * `reverseTransaction`: before settlement Braintree voids the transaction (VOIDED); after it, it
   * refunds it in full and answers a `Refund`: the void has not happened (`already_settled`).
   */
  async void(request: OperationRequest): Promise<OperationResult> {
    if (!request.connectionTransactionId) return { status: 'failed', errorCode: 'void_failed' };
    const answer = await this.call<{
      reverseTransaction?: { reversal?: { __typename?: string; id?: string; status?: string } | null } | null;
    }>(request.credentials, 'ReverseTransaction', {
      input: { transactionId: request.connectionTransactionId },
    });
    if (!answer.ok) return { status: 'failed', errorCode: refusalCode(answer) };
    const reversal = answer.data.reverseTransaction?.reversal;
    if (reversal?.__typename === 'Transaction' && reversal.status === 'VOIDED')
      return { status: 'succeeded' };
    if (reversal?.__typename === 'Refund') return { status: 'failed', errorCode: 'already_settled' };
    return { status: 'failed', errorCode: 'void_failed' };
  }

  /** `refundTransaction`, partial with `refund.amount`, named by its order id (found by it later). */
  async refund(request: RefundRequest): Promise<OperationResult> {
    const answer = await this.call<{ refundTransaction?: { refund?: BraintreeRefund | null } | null }>(
      request.credentials,
      'RefundTransaction',
      {
        input: {
          transactionId: request.connectionTransactionId,
          refund: {
            amount: braintreeAmount(request.amount, request.currency),
            orderId: braintreeRefundOrderId(request.reconciliationId, request.refundId),
          },
        },
      },
    );
    if (!answer.ok) return { status: 'failed', errorCode: refusalCode(answer) };
    const refund = answer.data.refundTransaction?.refund;
    return refund ? refundResult(refund) : { status: 'failed', errorCode: 'refund_failed' };
  }

  /**
   * Where an operation stands at Braintree. An authorization is looked up by the attempt's order id (its
   * answer, with the transaction's id, may never have come), a capture or void by the transaction's id,
   * a refund by its order id.
   */
  async pollStatus(request: PollRequest): Promise<OperationResult | { status: 'not_found' }> {
    if (request.operation === 'refund') {
      if (!request.refundId) return { status: 'not_found' };
      const orderId = braintreeRefundOrderId(request.reconciliationId, request.refundId);
      const refunds = await this.search<BraintreeRefund>(
        request.credentials,
        'RefundsByOrderId',
        'refunds',
        orderId,
      );
      return refunds[0] ? refundResult(refunds[0]) : { status: 'not_found' };
    }
    const tx =
      request.operation === 'authorize'
        ? await this.findByOrderId(request.credentials, attemptReference(request))
        : await this.findById(request.credentials, request.connectionTransactionId);
    if (!tx) return { status: 'not_found' };
    switch (request.operation) {
      case 'authorize':
        if (isApproved(tx.status)) return { status: 'succeeded', vendorId: tx.id };
        if (tx.status === 'AUTHORIZING') return { status: 'pending' };
        return { status: 'failed', errorCode: 'declined' };
      case 'capture':
        if (isCaptured(tx.status)) return { status: 'succeeded', vendorId: tx.id };
        if (tx.status === 'AUTHORIZED') return { status: 'not_found' };
        return { status: 'failed', errorCode: 'capture_failed' };
      case 'void':
        if (tx.status === 'VOIDED') return { status: 'succeeded' };
        if (tx.status === 'AUTHORIZED') return { status: 'not_found' };
        return { status: 'failed', errorCode: 'void_failed' };
    }
  }

  /**
   * The transaction Braintree made for an attempt (its order id), preferring one that went through;
   * undefined when there is none. A refusal of the search is thrown as an unknown outcome.
   */
  private async findByOrderId(
    credentials: Credentials,
    orderId: string,
    timeoutMs = this.timeoutMs,
  ): Promise<BraintreeTransaction | undefined> {
    const found = await this.search<BraintreeTransaction>(
      credentials,
      'TransactionsByOrderId',
      'transactions',
      orderId,
      timeoutMs,
    );
    const own = found.filter((tx) => tx.orderId === orderId);
    return own.find((tx) => isApproved(tx.status)) ?? own[0];
  }

  private async findById(credentials: Credentials, id: string): Promise<BraintreeTransaction | undefined> {
    if (!id) return undefined;
    const answer = await this.call<{ node?: (BraintreeTransaction & { __typename?: string }) | null }>(
      credentials,
      'TransactionById',
      { id },
    );
    if (!answer.ok) {
      if (answer.errorClass === 'NOT_FOUND') return undefined;
      throw new ProcessorUnavailable(`Braintree refused a transaction look-up (${refusalCode(answer)})`);
    }
    const node = answer.data.node;
    return node?.__typename === 'Transaction' ? node : undefined;
  }

  private async search<T>(
    credentials: Credentials,
    operation: 'TransactionsByOrderId' | 'RefundsByOrderId',
    field: 'transactions' | 'refunds',
    orderId: string,
    timeoutMs = this.timeoutMs,
  ): Promise<T[]> {
    if (timeoutMs <= 0) throw new ProcessorUnavailable('no time left to search Braintree');
    const answer = await this.call<SearchPayload<T>>(credentials, operation, { orderId }, timeoutMs);
    if (!answer.ok) throw new ProcessorUnavailable(`Braintree refused a search (${refusalCode(answer)})`);
    const edges = answer.data.search?.[field]?.edges ?? [];
    return edges.map((edge) => edge?.node).filter((node): node is NonNullable<typeof node> => !!node);
  }
}
