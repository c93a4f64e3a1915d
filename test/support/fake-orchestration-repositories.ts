/** In-memory `transactions` and `refunds` tables, for the transactions service spec. */
import type { Change } from '../../src/common/unit-of-work/change';
import type {
  NewRefund,
  RefundRow,
  RefundStatus,
} from '../../src/modules/orchestration/transactions/refunds.repository';
import type { Transition } from '../../src/modules/orchestration/transactions/transaction-state';
import {
  type AttemptOutcome,
  type AttemptRow,
  followingOutcome,
} from '../../src/modules/orchestration/transactions/attempts.repository';
import type {
  IssuedApproval,
  NewTransaction,
  TransactionRow,
} from '../../src/modules/orchestration/transactions/transactions.repository';
import type {
  BuyerRow,
  PaymentMethodRow,
  StoredCardRow,
} from '../../src/modules/orchestration/buyers/buyers.repository';

/** The `transactions` table as the repository reads and writes it (conditional transitions included). */
export class FakeTransactions {
  readonly rows = new Map<string, TransactionRow>();
  /** Where a transaction's first attempt is written (with the transaction, as the repository does). */
  attempts?: FakeAttempts;
  /** Makes the next `apply` fail (the database went away). */
  failNextApply?: Error;

  private key = (tenantId: string, id: string) => `${tenantId}/${id}`;

  private copy = (row: TransactionRow | undefined) => (row ? { ...row } : undefined);

  insert(_change: Change, t: NewTransaction): Promise<TransactionRow> {
    const row: TransactionRow = {
      id: t.id,
      tenant_id: t.tenantId,
      connection_id: t.connectionId,
      token_id: t.tokenId,
      status: t.declinedByRule ? 'authorization_declined' : 'processing',
      pending_operation: t.declinedByRule ? null : 'authorize',
      pending_since: t.declinedByRule ? null : t.createdAt,
      pending_amount: null,
      previous_status: null,
      intent: t.intent,
      amount: String(t.amount),
      currency: t.currency,
      country: t.country,
      authorized_amount: '0',
      captured_amount: '0',
      refunded_amount: '0',
      external_identifier: t.externalIdentifier,
      metadata: t.metadata,
      payment_source: t.paymentSource,
      merchant_initiated: t.merchantInitiated,
      is_subsequent_payment: t.isSubsequentPayment,
      previous_scheme_transaction_id: t.previousSchemeTransactionId,
      three_d_session_id: t.threeDSessionId,
      payment_method: t.paymentMethod,
      scheme_transaction_id: null,
      connection_transaction_id: null,
      error_code: t.declinedByRule ? 'declined_by_rule' : null,
      auth_response_code: null,
      cvv_response_code: null,
      three_d_secure: null,
      attempt: 1,
      approval_token_hash: null,
      approval_token: null,
      approval_expires_at: null,
      vendor_action: null,
      buyer_id: t.buyer?.id ?? null,
      buyer_external_identifier: t.buyer?.externalIdentifier ?? null,
      buyer_display_name: t.buyer?.displayName ?? null,
      store_payment_method: t.storePaymentMethod,
      authorized_at: null,
      captured_at: null,
      voided_at: null,
      created_by: null,
      created_at: t.createdAt,
      updated_at: t.createdAt,
      c_formula_id: 'stripe-card',
      c_display_name: 'Stripe',
      c_method: 'card',
    };
    this.rows.set(this.key(t.tenantId, t.id), row);
    if (t.firstAttemptId && t.connectionId)
      void this.attempts?.begin(_change, t.tenantId, t.id, 1, t.connectionId, t.firstAttemptId, t.createdAt);
    return Promise.resolve({ ...row });
  }

  /** As the repository: only while `processing` its authorization at attempt `from`. */
  nextAttempt(
    _change: Change,
    tenantId: string,
    id: string,
    from: number,
    connectionId: string,
    now: Date,
  ): Promise<TransactionRow | undefined> {
    const row = this.rows.get(this.key(tenantId, id));
    if (!row || row.status !== 'processing' || row.pending_operation !== 'authorize' || row.attempt !== from)
      return Promise.resolve(undefined);
    Object.assign(row, {
      connection_id: connectionId,
      attempt: from + 1,
      pending_since: now,
      updated_at: now,
    });
    return Promise.resolve({ ...row });
  }

  find(tenantId: string, id: string): Promise<TransactionRow | undefined> {
    return Promise.resolve(this.copy(this.rows.get(this.key(tenantId, id))));
  }

  lock(_change: Change, tenantId: string, id: string): Promise<TransactionRow | undefined> {
    return this.find(tenantId, id);
  }

  apply(
    _change: Change,
    tenantId: string,
    id: string,
    transition: Transition,
    now: Date,
    approval?: IssuedApproval,
  ): Promise<TransactionRow | undefined> {
    if (this.failNextApply) {
      const error = this.failNextApply;
      this.failNextApply = undefined;
      return Promise.reject(error);
    }
    const row = this.rows.get(this.key(tenantId, id));
    if (!row || row.status !== transition.from) return Promise.resolve(undefined);
    const p = transition.patch;
    const money = (n: number | undefined) => (n === undefined ? undefined : String(n));
    Object.assign(row, {
      status: p.status,
      pending_operation: p.pending?.operation ?? null,
      pending_since: p.pending?.since ?? null,
      pending_amount: p.pending?.amount == null ? null : String(p.pending.amount),
      previous_status: p.previousStatus ?? null,
      updated_at: now,
    });
    const optional: Partial<Record<keyof TransactionRow, unknown>> = {
      connection_transaction_id: p.connectionTransactionId,
      scheme_transaction_id: p.schemeTransactionId,
      auth_response_code: p.authResponseCode,
      cvv_response_code: p.cvvResponseCode,
      error_code: p.errorCode,
      three_d_secure: p.threeDSecure,
      authorized_amount: money(p.authorizedAmount),
      authorized_at: p.authorizedAt,
      captured_amount: money(p.capturedAmount),
      captured_at: p.capturedAt,
      voided_at: p.voidedAt,
    };
    for (const [column, value] of Object.entries(optional))
      if (value !== undefined) Object.assign(row, { [column]: value });
    if (p.approval === 'clear') Object.assign(row, { approval_token: null, vendor_action: null });
    if (p.approval === 'issue')
      Object.assign(row, {
        approval_token: approval!.sealedToken,
        approval_expires_at: approval!.expiresAt,
        vendor_action: approval!.sealedVendorAction,
      });
    return Promise.resolve({ ...row });
  }

  addRefunded(_change: Change, tenantId: string, id: string, amount: string, now: Date) {
    const row = this.rows.get(this.key(tenantId, id))!;
    row.refunded_amount = String(Number(row.refunded_amount) + Number(amount));
    row.updated_at = now;
    return Promise.resolve({ ...row });
  }

  findUnsettled(stuckBefore: Date, now: Date, limit: number): Promise<TransactionRow[]> {
    const due = [...this.rows.values()].filter(
      (t) =>
        t.status === 'capture_pending' ||
        t.status === 'authorization_void_pending' ||
        (t.status === 'processing' && t.pending_since! <= stuckBefore) ||
        (t.status === 'buyer_approval_pending' && t.approval_expires_at! <= now),
    );
    return Promise.resolve(due.slice(0, limit).map((t) => ({ ...t })));
  }
}

/** The `refunds` table. */
export class FakeRefunds {
  readonly rows: (RefundRow & { updated_at: Date; vendor_id: string | null })[] = [];

  pendingTotal(_change: Change, tenantId: string, transactionId: string): Promise<number> {
    return Promise.resolve(
      this.rows
        .filter((r) => r.tenant_id === tenantId && r.transaction_id === transactionId)
        .filter((r) => r.status === 'processing')
        .reduce((sum, r) => sum + Number(r.amount), 0),
    );
  }

  insert(_change: Change, r: NewRefund): Promise<RefundRow> {
    const row = {
      id: r.id,
      tenant_id: r.tenantId,
      transaction_id: r.transactionId,
      amount: String(r.amount),
      currency: r.currency,
      status: 'processing' as const,
      created_at: r.createdAt,
      updated_at: r.createdAt,
      vendor_id: null,
    };
    this.rows.push(row);
    return Promise.resolve(this.view(row));
  }

  settle(
    _change: Change,
    refund: Pick<RefundRow, 'tenant_id' | 'id'>,
    outcome: { status: RefundStatus; vendorId: string | null },
    now: Date,
  ): Promise<RefundRow | undefined> {
    const row = this.rows.find((r) => r.tenant_id === refund.tenant_id && r.id === refund.id);
    if (!row || row.status !== 'processing') return Promise.resolve(undefined);
    Object.assign(row, { status: outcome.status, vendor_id: outcome.vendorId, updated_at: now });
    return Promise.resolve(this.view(row));
  }

  find(tenantId: string, transactionId: string, id: string): Promise<RefundRow | undefined> {
    const row = this.rows.find(
      (r) => r.tenant_id === tenantId && r.transaction_id === transactionId && r.id === id,
    );
    return Promise.resolve(row ? this.view(row) : undefined);
  }

  findStuck(stuckBefore: Date, limit: number): Promise<RefundRow[]> {
    const stuck = this.rows.filter((r) => r.status === 'processing' && r.updated_at <= stuckBefore);
    return Promise.resolve(stuck.slice(0, limit).map((r) => this.view(r)));
  }

  private view({ updated_at: _u, vendor_id: _v, ...row }: FakeRefunds['rows'][number]): RefundRow {
    return { ...row };
  }
}

/** The `transaction_attempts` table as the repository writes it (a settled attempt stays settled). */
export class FakeAttempts {
  readonly rows: AttemptRow[] = [];

  begin(
    _change: Change,
    tenantId: string,
    transactionId: string,
    number: number,
    connectionId: string,
    id: string,
    now: Date,
  ): Promise<void> {
    if (
      this.rows.some(
        (a) => a.tenant_id === tenantId && a.transaction_id === transactionId && a.number === number,
      )
    )
      throw new Error(`attempt ${number} of ${transactionId} exists`);
    this.rows.push({
      tenant_id: tenantId,
      id,
      transaction_id: transactionId,
      number,
      connection_id: connectionId,
      status: 'processing',
      error_code: null,
      auth_response_code: null,
      connection_transaction_id: null,
      created_at: now,
      updated_at: now,
      c_formula_id: 'stripe-card',
      c_display_name: 'Stripe',
      c_method: 'card',
    });
    return Promise.resolve();
  }

  settle(
    _change: Change,
    tenantId: string,
    transactionId: string,
    number: number,
    outcome: AttemptOutcome,
    now: Date,
  ): Promise<void> {
    const row = this.rows.find(
      (a) => a.tenant_id === tenantId && a.transaction_id === transactionId && a.number === number,
    );
    if (row && (row.status === 'processing' || row.status === 'buyer_approval_pending'))
      Object.assign(row, {
        status: outcome.status,
        error_code: outcome.errorCode,
        auth_response_code: outcome.authResponseCode,
        connection_transaction_id: outcome.connectionTransactionId,
        updated_at: now,
      });
    return Promise.resolve();
  }

  follow(change: Change, row: TransactionRow, now: Date): Promise<void> {
    const outcome = followingOutcome(row);
    return outcome
      ? this.settle(change, row.tenant_id, row.id, row.attempt, outcome, now)
      : Promise.resolve();
  }

  list(tenantId: string, transactionId: string): Promise<AttemptRow[]> {
    return Promise.resolve(
      this.rows
        .filter((a) => a.tenant_id === tenantId && a.transaction_id === transactionId)
        .sort((a, b) => a.number - b.number)
        .map((a) => ({ ...a })),
    );
  }
}

/**
 * The `buyers` and `buyer_payment_methods` tables as transactions read and write them: buyers by id, and
 * stored cards (fingerprints given by `fingerprints`, token id to fingerprint) with their last use.
 */
export class FakeBuyers {
  readonly buyers = new Map<string, BuyerRow>();
  readonly stored = new Map<string, StoredCardRow>();

  constructor(private readonly fingerprints: Map<string, string>) {}

  addBuyer(tenantId: string, id: string, externalIdentifier: string | null = null): BuyerRow {
    const at = new Date('2026-01-01T00:00:00Z');
    const row = {
      tenant_id: tenantId,
      id,
      external_identifier: externalIdentifier,
      display_name: null,
      created_at: at,
      updated_at: at,
    };
    this.buyers.set(id, row);
    return row;
  }

  store(tenantId: string, buyerId: string, tokenId: string, at: Date): void {
    const fingerprint = this.fingerprints.get(tokenId) ?? tokenId;
    this.stored.set(tokenId, {
      tenant_id: tenantId,
      token_id: tokenId,
      buyer_id: buyerId,
      fingerprint,
      created_at: at,
      last_used_at: null,
    });
  }

  find(tenantId: string, id: string): Promise<BuyerRow | undefined> {
    const row = this.buyers.get(id);
    return Promise.resolve(row?.tenant_id === tenantId ? row : undefined);
  }

  findStored(tenantId: string, tokenId: string): Promise<StoredCardRow | undefined> {
    const row = this.stored.get(tokenId);
    return Promise.resolve(row?.tenant_id === tenantId ? row : undefined);
  }

  listMethods(tenantId: string, buyerId: string): Promise<PaymentMethodRow[]> {
    const at = (row: StoredCardRow) => (row.last_used_at ?? row.created_at).getTime();
    const rows = [...this.stored.values()]
      .filter((row) => row.tenant_id === tenantId && row.buyer_id === buyerId)
      .sort((a, b) => at(b) - at(a));
    return Promise.resolve(rows.map((row) => ({ ...row, card_brand: 'visa', mask: null })));
  }

  used(
    _change: Change,
    tenantId: string,
    tokenId: string,
    buyerId: string | null,
    store: boolean,
    now: Date,
  ): Promise<void> {
    const fingerprint = this.fingerprints.get(tokenId) ?? tokenId;
    for (const row of this.stored.values())
      if (
        row.tenant_id === tenantId &&
        (row.token_id === tokenId || (row.buyer_id === buyerId && row.fingerprint === fingerprint))
      )
        row.last_used_at = now;
    const taken = [...this.stored.values()].some(
      (row) => row.token_id === tokenId || (row.buyer_id === buyerId && row.fingerprint === fingerprint),
    );
    if (store && buyerId && this.buyers.has(buyerId) && !taken) {
      this.store(tenantId, buyerId, tokenId, now);
      this.stored.get(tokenId)!.last_used_at = now;
    }
    return Promise.resolve();
  }
}
