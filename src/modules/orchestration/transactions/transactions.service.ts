import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { AuditTrail } from '../../../common/audit/audit-trail.service';
import type { AuditActor, AuditEntry } from '../../../common/audit/audit.types';
import { BASE62 } from '../../../common/auth/api-key';
import type { Principal } from '../../../common/auth/principal';
import { open, seal } from '../../../common/crypto/aead';
import { TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import {
  addFieldError,
  badRequest,
  conflict,
  FieldErrors,
  invalidField,
  notFound,
  ProblemException,
} from '../../../common/errors/problem.exception';
import { validationProblem } from '../../../common/errors/validation';
import { Clock } from '../../../common/jobs/clock';
import { offsetOf, offsetPage, OffsetPage } from '../../../common/pagination/offset-pagination';
import { AppConfig } from '../../../config/app-config';
import { SqlParams } from '../../../database/sql';
import { TokensService, UsableToken } from '../../tokens/tokens.service';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { supports } from '../formulas/formulas';
import type { AuthorizeResult, CardData, OperationResult } from '../processors/processor.port';
import { ProcessorRegistry } from '../processors/processor.registry';
import { toReconciliationId } from './reconciliation';
import {
  CreateTransactionDto,
  ListTransactionsQueryDto,
  RefundDto,
  TransactionDto,
  TransactionStatus,
} from './transaction.dto';

/** How long the buyer has to approve on the approval page. */
export const APPROVAL_LIFETIME_MS = 15 * 60_000;
/** A processor call that has not answered by then counts as failed. */
export const PROCESSOR_TIMEOUT_MS = 30_000;
/** A transaction `processing` for longer than this was interrupted (the process died): the job settles it. */
export const STUCK_AFTER_MS = 60_000;

export interface TransactionRow {
  id: string;
  tenant_id: string;
  connection_id: string;
  token_id: string;
  status: TransactionStatus;
  pending_operation: 'authorize' | 'capture' | 'void' | 'challenge' | null;
  pending_since: Date | null;
  pending_amount: string | null;
  previous_status: TransactionStatus | null;
  intent: 'authorize' | 'capture';
  amount: string;
  currency: string;
  country: string | null;
  authorized_amount: string;
  captured_amount: string;
  refunded_amount: string;
  external_identifier: string | null;
  metadata: Record<string, string> | null;
  payment_source: 'ecommerce' | 'card_on_file' | 'recurring';
  merchant_initiated: boolean;
  is_subsequent_payment: boolean;
  previous_scheme_transaction_id: string | null;
  three_d_session_id: string | null;
  payment_method: { scheme: string | null; label: string; expiration_date: string; fingerprint: string };
  scheme_transaction_id: string | null;
  connection_transaction_id: string | null;
  error_code: string | null;
  auth_response_code: string | null;
  cvv_response_code: string | null;
  three_d_secure: TransactionDto['three_d_secure'];
  approval_token: Buffer | null;
  approval_expires_at: Date | null;
  authorized_at: Date | null;
  captured_at: Date | null;
  voided_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** Joined from the connection. */
  c_formula_id: string;
  c_display_name: string;
  c_method: string;
}

interface RefundRow {
  id: string;
  transaction_id: string;
  amount: string;
  currency: string;
  status: 'processing' | 'succeeded' | 'failed';
  created_at: Date;
}

/** A transaction row with the connection summary every transaction object shows. */
export const SELECT_TRANSACTION = `SELECT t.*, c.formula_id AS c_formula_id, c.display_name AS c_display_name, c.method AS c_method
  FROM transactions t JOIN connections c ON c.id = t.connection_id`;

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const approvalAad = (tenantId: string, id: string) => `${tenantId}:${id}:approval-token`;
export const approvalDigest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

const SCHEMES: Record<string, string> = { 'american-express': 'amex', 'diners-club': 'diners-club' };

/** What a processor said of an authorization, as the columns it sets. */
function authorizationColumns(result: AuthorizeResult, amount: number, now: Date): Record<string, unknown> {
  const status: TransactionStatus =
    result.outcome === 'challenge'
      ? 'buyer_approval_pending'
      : result.outcome === 'declined'
        ? 'authorization_declined'
        : result.outcome === 'failed'
          ? 'authorization_failed'
          : result.captured
            ? 'capture_succeeded'
            : 'authorization_succeeded';
  const approved = result.outcome === 'approved';
  return {
    status,
    connection_transaction_id: result.connectionTransactionId,
    scheme_transaction_id: result.schemeTransactionId,
    auth_response_code: result.authResponseCode,
    cvv_response_code: result.cvvResponseCode,
    error_code: result.errorCode,
    three_d_secure: result.threeDSecure ? JSON.stringify(result.threeDSecure) : null,
    authorized_amount: approved ? amount : 0,
    authorized_at: approved ? now : null,
    captured_amount: approved && result.captured ? amount : 0,
    captured_at: approved && result.captured ? now : null,
  };
}

/** What an authorization that the processor did not answer (error, timeout) counts as. */
function processorFailure(
  connectionTransactionId: string | null,
  cvvResponseCode: AuthorizeResult['cvvResponseCode'],
): AuthorizeResult {
  return {
    outcome: 'failed',
    captured: false,
    connectionTransactionId,
    schemeTransactionId: null,
    authResponseCode: null,
    cvvResponseCode,
    errorCode: 'processor_error',
    threeDSecure: null,
  };
}

function withTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('processor timeout')), PROCESSOR_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export const actorOf = (who: Principal): AuditActor => ({
  tenantId: who.tenantId,
  applicationId: who.applicationId,
  sessionId: who.sessionId,
});

/**
 * Transactions (contract section 7). Every processor call happens outside any database transaction:
 * the row is committed as `processing` first (a crash leaves a record the job settles), the call is
 * made holding no lock, and the outcome is written in a second transaction with its audit log.
 */
@Injectable()
export class TransactionsService {
  private readonly logger = new Logger('Transactions');

  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly tokens: TokensService,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly tenantKeys: TenantKeysService,
    private readonly audit: AuditTrail,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async create(who: Principal, body: CreateTransactionDto): Promise<TransactionDto> {
    const threeDSessionId = this.threeDSessionId(body.three_d_session_id);
    const prepared = await this.db.withTransaction(async () => {
      const errors: FieldErrors = {};
      const connection = await this.connections.loadForPayment(who.tenantId, body.connection_id);
      if (!connection) addFieldError(errors, 'connection_id', 'no such connection');
      else this.checkAgainstConnection(connection, body, errors);
      if (body.is_subsequent_payment && !body.previous_scheme_transaction_id)
        addFieldError(
          errors,
          'previous_scheme_transaction_id',
          'required when is_subsequent_payment is true',
        );
      this.checkMetadata(body.metadata, errors);
      const token = await this.cardToken(who, body.token, errors);
      if (Object.keys(errors).length || !connection || !token) throw validationProblem(errors);

      const id = randomUUID();
      const now = this.clock.now();
      const mask = token.mask as { number: string; expiration_month: number; expiration_year: number };
      const paymentMethod = {
        scheme: token.card_brand ? (SCHEMES[token.card_brand] ?? token.card_brand) : null,
        label: mask.number.slice(-4),
        expiration_date: `${String(mask.expiration_month).padStart(2, '0')}/${String(mask.expiration_year % 100).padStart(2, '0')}`,
        fingerprint: token.fingerprint,
      };
      await this.db.tx.query(
        `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, pending_operation, pending_since, intent,
            amount, currency, country, external_identifier, metadata, payment_source, merchant_initiated,
            is_subsequent_payment, previous_scheme_transaction_id, three_d_session_id, payment_method, created_by,
            created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'processing', 'authorize', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $5, $5)`,
        [
          id,
          who.tenantId,
          connection.row.id,
          token.id,
          now,
          body.intent ?? 'authorize',
          body.amount,
          body.currency,
          body.country ?? null,
          body.external_identifier ?? null,
          body.metadata ? JSON.stringify(body.metadata) : null,
          body.payment_source ?? 'ecommerce',
          body.merchant_initiated ?? false,
          body.is_subsequent_payment ?? false,
          body.previous_scheme_transaction_id ?? null,
          threeDSessionId,
          JSON.stringify(paymentMethod),
          who.applicationId,
        ],
      );
      return { id, connection, token, createdAt: now };
    });

    const { id, connection, token } = prepared;
    const paymentSource = body.payment_source ?? 'ecommerce';
    const cvc = paymentSource === 'ecommerce' ? token.cvc : undefined;
    const data = token.data as CardData;
    let result: AuthorizeResult;
    try {
      result = await withTimeout(
        this.processors.for(connection.formula.id).authorize({
          credentials: connection.credentials,
          reconciliationId: toReconciliationId(id),
          amount: body.amount,
          currency: body.currency,
          country: body.country ?? null,
          intent: body.intent ?? 'authorize',
          card: {
            number: data.number,
            expiration_month: data.expiration_month,
            expiration_year: data.expiration_year,
          },
          ...(cvc !== undefined ? { cvc } : {}),
          paymentSource,
          merchantInitiated: body.merchant_initiated ?? false,
          isSubsequentPayment: body.is_subsequent_payment ?? false,
          previousSchemeTransactionId: body.previous_scheme_transaction_id ?? null,
          threeDSessionId,
          threeDSecureEnabled: connection.row.three_d_secure_enabled,
        }),
      );
    } catch (error) {
      this.logger.warn({ err: error, transaction_id: id }, 'authorization failed at the processor');
      result = processorFailure(null, cvc === undefined ? 'not_provided' : 'unavailable');
    }

    try {
      return await this.recordAuthorization(
        who,
        id,
        prepared.createdAt,
        body.amount,
        result,
        cvc !== undefined ? token.id : undefined,
      );
    } catch (error) {
      // The processor answered but the outcome could not be written (database gone, process stopping):
      // the row stays `processing`, the settlement job asks the processor and finishes it. The caller
      // gets the transaction as it stands, so that an idempotent retry replays it rather than charging again.
      this.logger.error(
        { err: error, transaction_id: id },
        'authorization outcome not recorded; left to settlement',
      );
      return this.get(who, id);
    }
  }

  private recordAuthorization(
    who: Principal,
    id: string,
    createdAt: Date,
    amount: number,
    result: AuthorizeResult,
    cvcTokenId: string | undefined,
  ): Promise<TransactionDto> {
    return this.db.withTransaction(async () => {
      const now = this.clock.now();
      const columns = authorizationColumns(result, amount, now);
      if (result.outcome === 'challenge')
        Object.assign(columns, await this.approvalColumns(who.tenantId, id, createdAt));
      await this.applyUpdate(id, 'processing', columns, now);
      // The CVC serves one authorization only.
      if (cvcTokenId !== undefined) await this.tokens.forgetCvc(who.tenantId, cvcTokenId);
      await this.log(actorOf(who), id, 'create', `Transaction created: ${String(columns.status)}`);
      return this.get(who, id);
    });
  }

  async get(who: Principal, id: string): Promise<TransactionDto> {
    return this.toDto(await this.find(who.tenantId, id));
  }

  async list(who: Principal, query: ListTransactionsQueryDto): Promise<OffsetPage<TransactionDto>> {
    const p = new SqlParams();
    const where = [`t.tenant_id = ${p.add(who.tenantId)}`];
    if (query.status) where.push(`t.status = ${p.add(query.status)}`);
    if (query.connection_id) where.push(`t.connection_id = ${p.add(query.connection_id)}`);
    if (query.external_identifier) where.push(`t.external_identifier = ${p.add(query.external_identifier)}`);
    const { skip, take } = offsetOf(query);
    const countParams = [...p.values];
    const rows: TransactionRow[] = await this.db.tx.query(
      `${SELECT_TRANSACTION} WHERE ${where.join(' AND ')} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(take)} OFFSET ${p.add(skip)}`,
      p.values,
    );
    const [{ n }]: { n: number }[] = await this.db.tx.query(
      `SELECT count(*)::int AS n FROM transactions t WHERE ${where.join(' AND ')}`,
      countParams,
    );
    return offsetPage(await Promise.all(rows.map((row) => this.toDto(row))), n, query);
  }

  async capture(who: Principal, id: string, amount?: number): Promise<TransactionDto> {
    const { row, connection, captureAmount } = await this.db.withTransaction(async () => {
      const row = await this.find(who.tenantId, id, true);
      this.expectStatus(row, 'authorization_succeeded', 'captured');
      const connection = (await this.connections.loadForPayment(who.tenantId, row.connection_id, true))!;
      const authorized = Number(row.authorized_amount);
      const captureAmount = amount ?? authorized;
      if (captureAmount > authorized)
        throw invalidField('amount', `amount must be at most the authorized amount ${authorized}`);
      if (captureAmount < authorized && !supports(connection.formula, 'partial_capture'))
        throw invalidField('amount', `${connection.formula.id} does not support partial capture`);
      await this.markProcessing(row, 'capture', captureAmount);
      return { row, connection, captureAmount };
    });
    const result = await this.call(() =>
      this.processors.for(connection.formula.id).capture({
        ...this.operationRequest(row, connection),
        amount: captureAmount,
        currency: row.currency,
      }),
    );
    return this.db.withTransaction(async () => {
      const now = this.clock.now();
      await this.applyUpdate(id, 'processing', this.captureColumns(result, captureAmount, now), now);
      await this.log(
        actorOf(who),
        id,
        'update',
        `Transaction capture of ${captureAmount} ${row.currency}: ${result.status}`,
      );
      return this.get(who, id);
    });
  }

  async void(who: Principal, id: string): Promise<TransactionDto> {
    const { row, connection } = await this.db.withTransaction(async () => {
      const row = await this.find(who.tenantId, id, true);
      await this.tokens.loadForUse(who, row.token_id).catch((error: unknown) => {
        // The caller needs token:use on the transaction's token, as to create it.
        if (error instanceof ProblemException && error.getStatus() === 404) throw notFound('Transaction');
        throw error;
      });
      this.expectStatus(row, 'authorization_succeeded', 'voided');
      const connection = (await this.connections.loadForPayment(who.tenantId, row.connection_id, true))!;
      if (!supports(connection.formula, 'void'))
        throw badRequest(
          `${connection.formula.id} does not support voiding an authorization.`,
          undefined,
          'void_not_supported',
        );
      await this.markProcessing(row, 'void', null);
      return { row, connection };
    });
    const result = await this.call(() =>
      this.processors.for(connection.formula.id).void(this.operationRequest(row, connection)),
    );
    return this.db.withTransaction(async () => {
      const now = this.clock.now();
      await this.applyUpdate(id, 'processing', this.voidColumns(result, now), now);
      await this.log(actorOf(who), id, 'update', `Transaction void: ${result.status}`);
      return this.get(who, id);
    });
  }

  async refund(who: Principal, id: string, amount?: number): Promise<RefundDto> {
    const { row, connection, refund } = await this.db.withTransaction(async () => {
      const row = await this.find(who.tenantId, id, true);
      this.expectStatus(row, 'capture_succeeded', 'refunded');
      const connection = (await this.connections.loadForPayment(who.tenantId, row.connection_id, true))!;
      if (!supports(connection.formula, 'refunds'))
        throw badRequest(
          `${connection.formula.id} does not support refunds.`,
          undefined,
          'refunds_not_supported',
        );
      const [{ pending }]: { pending: string }[] = await this.db.tx.query(
        `SELECT coalesce(sum(amount), 0) AS pending FROM refunds WHERE transaction_id = $1 AND status = 'processing'`,
        [id],
      );
      const left = Number(row.captured_amount) - Number(row.refunded_amount) - Number(pending);
      if (left <= 0) throw conflict('The transaction has been refunded in full.');
      const refundAmount = amount ?? left;
      if (refundAmount > left)
        throw invalidField('amount', `amount must be at most ${left}, what is left of the captured amount`);
      if (refundAmount < left && !supports(connection.formula, 'partial_refunds'))
        throw invalidField('amount', `${connection.formula.id} does not support partial refunds`);
      const now = this.clock.now();
      const refunds: RefundRow[] = await this.db.tx.query(
        `INSERT INTO refunds (id, tenant_id, transaction_id, amount, currency, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 'processing', $6, $6) RETURNING *`,
        [randomUUID(), who.tenantId, id, refundAmount, row.currency, now],
      );
      return { row, connection, refund: refunds[0] };
    });
    const result = await this.call(() =>
      this.processors.for(connection.formula.id).refund({
        ...this.operationRequest(row, connection),
        amount: Number(refund.amount),
        currency: refund.currency,
        refundId: refund.id,
      }),
    );
    return this.db.withTransaction(async () => {
      const settled = await this.settleRefund(refund, result);
      await this.log(
        actorOf(who),
        id,
        'update',
        `Refund ${refund.id} of ${refund.amount} ${refund.currency}: ${settled.status}`,
      );
      return settled;
    });
  }

  async listRefunds(
    who: Principal,
    id: string,
    query: { page: number; size: number },
  ): Promise<OffsetPage<RefundDto>> {
    await this.find(who.tenantId, id);
    const { skip, take } = offsetOf(query);
    const rows: RefundRow[] = await this.db.tx.query(
      `SELECT * FROM refunds WHERE transaction_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
      [id, take, skip],
    );
    const [{ n }]: { n: number }[] = await this.db.tx.query(
      'SELECT count(*)::int AS n FROM refunds WHERE transaction_id = $1',
      [id],
    );
    return offsetPage(rows.map(refundDto), n, query);
  }

  /** The buyer's choice on the approval page; returns what the page shows next. */
  async decideApproval(
    token: string,
    approved: boolean,
  ): Promise<{
    outcome: 'unknown' | 'used' | 'expired' | 'approved' | 'declined' | 'failed';
    row?: TransactionRow;
  }> {
    const claimed = await this.db.withTransaction(async () => {
      const rows: TransactionRow[] = await this.db.tx.query(
        `${SELECT_TRANSACTION} WHERE t.approval_token_hash = $1 FOR UPDATE OF t`,
        [approvalDigest(token)],
      );
      const row = rows[0];
      if (!row) return { outcome: 'unknown' as const };
      // Expired by the settlement job before the buyer came back: still an expired link, not a used one.
      if (row.error_code === 'approval_expired') return { outcome: 'expired' as const, row };
      if (row.status !== 'buyer_approval_pending') return { outcome: 'used' as const, row };
      const now = this.clock.now();
      if (row.approval_expires_at && row.approval_expires_at <= now) {
        await this.expireApproval(row, now);
        return { outcome: 'expired' as const, row };
      }
      await this.markProcessing(row, 'challenge', null);
      return { outcome: 'claimed' as const, row };
    });
    if (claimed.outcome !== 'claimed') return claimed;
    const row = claimed.row;
    const connection = (await this.connections.loadForPayment(row.tenant_id, row.connection_id, true))!;
    let result: AuthorizeResult;
    try {
      result = await withTimeout(
        this.processors.for(connection.formula.id).completeChallenge({
          credentials: connection.credentials,
          reconciliationId: toReconciliationId(row.id),
          connectionTransactionId: row.connection_transaction_id ?? '',
          intent: row.intent,
          approved,
        }),
      );
    } catch (error) {
      this.logger.warn(
        { err: error, transaction_id: row.id },
        'challenge completion failed at the processor',
      );
      result = processorFailure(row.connection_transaction_id, 'not_provided');
    }
    return this.db.withTransaction(async () => {
      const now = this.clock.now();
      const columns = authorizationColumns(result, Number(row.amount), now);
      columns.cvv_response_code = row.cvv_response_code;
      columns.approval_token = null;
      await this.applyUpdate(row.id, 'processing', columns, now);
      await this.log(
        { tenantId: row.tenant_id, applicationId: null },
        row.id,
        'update',
        `Buyer ${approved ? 'approved' : 'declined'} the payment on the approval page: ${String(columns.status)}`,
      );
      const updated = await this.find(row.tenant_id, row.id);
      const outcome =
        result.outcome === 'approved' ? 'approved' : result.outcome === 'declined' ? 'declined' : 'failed';
      return { outcome, row: updated };
    });
  }

  /** The approval page's view of a pending transaction, or why there is none. */
  async findForApproval(
    token: string,
  ): Promise<{ row?: TransactionRow; state: 'unknown' | 'used' | 'expired' | 'pending' }> {
    const rows: TransactionRow[] = await this.db.tx.query(
      `${SELECT_TRANSACTION} WHERE t.approval_token_hash = $1`,
      [approvalDigest(token)],
    );
    const row = rows[0];
    if (!row) return { state: 'unknown' };
    if (row.error_code === 'approval_expired') return { state: 'expired', row };
    if (row.status !== 'buyer_approval_pending') return { state: 'used', row };
    if (row.approval_expires_at && row.approval_expires_at <= this.clock.now())
      return { state: 'expired', row };
    return { state: 'pending', row };
  }

  // --- used by the settlement job -------------------------------------------------------------------

  async expireApproval(row: TransactionRow, now: Date): Promise<void> {
    await this.applyUpdate(
      row.id,
      'buyer_approval_pending',
      { status: 'authorization_failed', error_code: 'approval_expired', approval_token: null },
      now,
    );
    await this.log(
      { tenantId: row.tenant_id, applicationId: null },
      row.id,
      'update',
      'Buyer approval expired: authorization_failed',
    );
  }

  captureColumns(
    result: OperationResult | { status: 'not_found' },
    amount: number,
    now: Date,
  ): Record<string, unknown> {
    if (result.status === 'succeeded')
      return { status: 'capture_succeeded', captured_amount: amount, captured_at: now, error_code: null };
    if (result.status === 'pending')
      return {
        status: 'capture_pending',
        pending_operation: 'capture',
        pending_since: now,
        pending_amount: amount,
      };
    return {
      status: 'authorization_succeeded',
      error_code: result.status === 'failed' ? (result.errorCode ?? 'capture_failed') : 'processor_timeout',
    };
  }

  voidColumns(result: OperationResult | { status: 'not_found' }, now: Date): Record<string, unknown> {
    if (result.status === 'succeeded')
      return { status: 'authorization_voided', voided_at: now, error_code: null };
    if (result.status === 'pending')
      return { status: 'authorization_void_pending', pending_operation: 'void', pending_since: now };
    return {
      status: 'authorization_succeeded',
      error_code: result.status === 'failed' ? (result.errorCode ?? 'void_failed') : 'processor_timeout',
    };
  }

  async settleRefund(
    refund: RefundRow,
    result: OperationResult | { status: 'not_found' },
  ): Promise<RefundDto> {
    const status =
      result.status === 'succeeded' ? 'succeeded' : result.status === 'pending' ? 'processing' : 'failed';
    const vendorId = 'vendorId' in result ? (result.vendorId ?? null) : null;
    const [rows]: [RefundRow[], number] = await this.db.tx.query(
      `UPDATE refunds SET status = $2, connection_refund_id = $3, updated_at = $4 WHERE id = $1 AND status = 'processing' RETURNING *`,
      [refund.id, status, vendorId, this.clock.now()],
    );
    if (rows[0] && status === 'succeeded')
      await this.db.tx.query(
        `UPDATE transactions SET refunded_amount = refunded_amount + $2, updated_at = $3 WHERE id = $1`,
        [refund.transaction_id, refund.amount, this.clock.now()],
      );
    return refundDto(rows[0] ?? refund);
  }

  /**
   * Writes an outcome, only if the transaction is still in `from` (so that a request and the job never
   * both settle it). `pending_*` columns are cleared unless the outcome sets them.
   */
  async applyUpdate(
    id: string,
    from: TransactionStatus,
    columns: Record<string, unknown>,
    now: Date,
  ): Promise<boolean> {
    const values: Record<string, unknown> = {
      pending_operation: null,
      pending_since: null,
      pending_amount: null,
      previous_status: null,
      ...columns,
      updated_at: now,
    };
    const p = new SqlParams();
    const sets = Object.entries(values).map(([column, value]) => `${column} = ${p.add(value)}`);
    const [, count]: [unknown, number] = await this.db.tx.query(
      `UPDATE transactions SET ${sets.join(', ')} WHERE id = ${p.add(id)} AND status = ${p.add(from)}`,
      p.values,
    );
    return count === 1;
  }

  async log(
    actor: AuditActor,
    id: string,
    operation: AuditEntry['operation'],
    message: string,
  ): Promise<void> {
    await this.audit.write(actor, [{ entityType: 'transaction', entityId: id, operation, message }]);
  }

  operationRequest(row: TransactionRow, connection: UsableConnection) {
    return {
      credentials: connection.credentials,
      reconciliationId: toReconciliationId(row.id),
      connectionTransactionId: row.connection_transaction_id ?? '',
      cardLast4: row.payment_method.label,
    };
  }

  async toDto(row: TransactionRow): Promise<TransactionDto> {
    let approvalUrl: string | null = null;
    if (row.status === 'buyer_approval_pending' && row.approval_token) {
      const keys = await this.tenantKeys.keysFor(row.tenant_id);
      const token = open(keys.encryption, row.approval_token, approvalAad(row.tenant_id, row.id)).toString(
        'utf8',
      );
      approvalUrl = `${this.config.publicBaseUrl}/orchestration/approvals/${token}`;
    }
    const pendingStates: TransactionStatus[] = ['processing', 'buyer_approval_pending', 'capture_pending'];
    const succeeded =
      row.intent === 'capture'
        ? row.status === 'capture_succeeded'
        : [
            'authorization_succeeded',
            'capture_pending',
            'capture_succeeded',
            'authorization_void_pending',
            'authorization_voided',
          ].includes(row.status);
    return {
      type: 'transaction',
      id: row.id,
      reconciliation_id: toReconciliationId(row.id),
      status: row.status,
      intent: row.intent,
      intent_outcome: succeeded ? 'succeeded' : pendingStates.includes(row.status) ? 'pending' : 'failed',
      amount: Number(row.amount),
      currency: row.currency,
      authorized_amount: Number(row.authorized_amount),
      captured_amount: Number(row.captured_amount),
      refunded_amount: Number(row.refunded_amount),
      country: row.country,
      external_identifier: row.external_identifier,
      metadata: row.metadata,
      payment_source: row.payment_source,
      merchant_initiated: row.merchant_initiated,
      is_subsequent_payment: row.is_subsequent_payment,
      previous_scheme_transaction_id: row.previous_scheme_transaction_id,
      payment_method: {
        type: 'payment-method',
        method: 'card',
        id: row.token_id,
        scheme: row.payment_method.scheme,
        label: row.payment_method.label,
        expiration_date: row.payment_method.expiration_date,
        fingerprint: row.payment_method.fingerprint,
        approval_url: approvalUrl,
      },
      connection: {
        id: row.connection_id,
        connection_formula_id: row.c_formula_id,
        display_name: row.c_display_name,
        method: row.c_method,
      },
      scheme_transaction_id: row.scheme_transaction_id,
      connection_transaction_id: row.connection_transaction_id,
      error_code: row.error_code,
      auth_response_code: row.auth_response_code,
      cvv_response_code: row.cvv_response_code,
      three_d_secure: row.three_d_secure,
      authorized_at: iso(row.authorized_at),
      captured_at: iso(row.captured_at),
      voided_at: iso(row.voided_at),
      approval_expires_at: row.status === 'buyer_approval_pending' ? iso(row.approval_expires_at) : null,
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
    };
  }

  async find(tenantId: string, id: string, lock = false): Promise<TransactionRow> {
    const rows: TransactionRow[] = await this.db.tx.query(
      `${SELECT_TRANSACTION} WHERE t.tenant_id = $1 AND t.id = $2${lock ? ' FOR UPDATE OF t' : ''}`,
      [tenantId, id],
    );
    if (!rows[0]) throw notFound('Transaction');
    return rows[0];
  }

  private async markProcessing(
    row: TransactionRow,
    operation: 'capture' | 'void' | 'challenge',
    amount: number | null,
  ): Promise<void> {
    const now = this.clock.now();
    await this.db.tx.query(
      `UPDATE transactions SET status = 'processing', previous_status = status, pending_operation = $2,
              pending_since = $3, pending_amount = $4, updated_at = $3
        WHERE id = $1`,
      [row.id, operation, now, amount],
    );
  }

  private expectStatus(row: TransactionRow, status: TransactionStatus, verb: string): void {
    if (row.status !== status)
      throw conflict(`A transaction in status ${row.status} cannot be ${verb}; it must be ${status}.`);
  }

  private async call(work: () => Promise<OperationResult>): Promise<OperationResult> {
    try {
      return await withTimeout(work());
    } catch (error) {
      this.logger.warn({ err: error }, 'processor call failed');
      return { status: 'failed', errorCode: 'processor_error' };
    }
  }

  private checkAgainstConnection(
    connection: UsableConnection,
    body: CreateTransactionDto,
    errors: FieldErrors,
  ): void {
    const { row, formula } = connection;
    if (!row.active) addFieldError(errors, 'connection_id', 'the connection is not active');
    else if (row.status !== 'available')
      addFieldError(errors, 'connection_id', `the connection is ${row.status}, not available`);
    if (!row.accepted_currencies.includes(body.currency))
      addFieldError(errors, 'currency', `the connection does not accept ${body.currency}`);
    if (body.country !== undefined && !row.accepted_countries.includes(body.country))
      addFieldError(errors, 'country', `the connection does not accept ${body.country}`);
    if (body.amount === 0 && !supports(formula, 'zero_auth'))
      addFieldError(errors, 'amount', `${formula.id} does not support zero-amount authorization`);
    if ((body.intent ?? 'authorize') === 'authorize' && !supports(formula, 'delayed_capture'))
      addFieldError(errors, 'intent', `${formula.id} does not support delayed capture`);
  }

  private checkMetadata(metadata: unknown, errors: FieldErrors): void {
    if (metadata === undefined || metadata === null) return;
    const entries = Object.entries(metadata as Record<string, unknown>);
    if (entries.length > 20) addFieldError(errors, 'metadata', 'metadata holds at most 20 values');
    for (const [key, value] of entries)
      if (typeof value !== 'string' || value.length > 500)
        addFieldError(errors, `metadata.${key}`, 'metadata values must be strings of at most 500 characters');
  }

  private threeDSessionId(value: unknown): string | null {
    if (value === undefined || value === null) return null;
    if (typeof value === 'string' && value.length > 0 && value.length <= 200) return value;
    if (typeof value === 'object' && !Array.isArray(value)) {
      const id = (value as { id?: unknown }).id;
      if (typeof id === 'string' && id.length > 0 && id.length <= 200) return id;
    }
    throw invalidField(
      'three_d_session_id',
      'three_d_session_id must be a string or an object with a string id',
    );
  }

  /** The token, with `token:use` checked on it through the caller's rules; unknown or not a card: a field error. */
  private async cardToken(who: Principal, id: string, errors: FieldErrors): Promise<UsableToken | undefined> {
    try {
      const token = await this.tokens.loadForUse(who, id);
      if (token.type !== 'card') {
        addFieldError(errors, 'token', 'the token must be of type card');
        return undefined;
      }
      return token;
    } catch (error) {
      if (error instanceof ProblemException && error.getStatus() === 404) {
        addFieldError(errors, 'token', 'no such token');
        return undefined;
      }
      throw error;
    }
  }

  private async approvalColumns(
    tenantId: string,
    id: string,
    createdAt: Date,
  ): Promise<Record<string, unknown>> {
    const token = BASE62.encode(randomBytes(32));
    const keys = await this.tenantKeys.keysFor(tenantId);
    return {
      approval_token_hash: approvalDigest(token),
      approval_token: seal(keys.encryption, Buffer.from(token, 'utf8'), approvalAad(tenantId, id)),
      approval_expires_at: new Date(createdAt.getTime() + APPROVAL_LIFETIME_MS),
    };
  }
}

export function refundDto(row: RefundRow): RefundDto {
  return {
    type: 'refund',
    id: row.id,
    transaction_id: row.transaction_id,
    amount: Number(row.amount),
    currency: row.currency,
    status: row.status,
    created_at: row.created_at.toISOString(),
  };
}
