import { Transactional } from '../../common/context/transactional';
import { AuditTrail } from '../../common/audit/audit-trail.service';
import {
  CURSOR_TIME,
  CURSOR_UUID,
  cursorTimeSql,
  decodeCursor,
  encodeCursor,
} from '../../common/pagination/cursor-pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import type { RuleTransform } from '../../common/auth/access-rule';
import type { Principal } from '../../common/auth/principal';
import { open, seal } from '../../common/crypto/aead';
import { hmac, hmacBase62, TenantKeys, TenantKeysService } from '../../common/crypto/tenant-keys.service';
import {
  badRequest,
  conflict,
  FieldErrors,
  forbidden,
  notFound,
  addFieldError,
} from '../../common/errors/problem.exception';
import { validationProblem } from '../../common/errors/validation';
import { Clock } from '../../common/jobs/clock';
import { offsetPage, OffsetPage } from '../../common/pagination/offset-pagination';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../common/pagination/offset-pagination.dto';
import { LOCK_KEYS } from '../../database/data-source';
import { multiRowInsert, SqlParams } from '../../database/sql';
import { ExpressionEvaluator } from './expression-evaluator';
import { accessPredicate, decide, mayEvaluateStoredData, refusedContainers } from './token-access';
import {
  applyEvaluation,
  collectSlots,
  expressionBatch,
  isElement,
  isPlainObject,
  MAX_TOKENS_PER_REQUEST,
  parseElement,
  parseExpiresAt,
  parseFingerprintExpression,
  parseMetadata,
  parseSearchIndexes,
  ParsedElement,
  rebuild,
} from './token-request';
import { emptyFilters, parseSearchQuery, TokenFilters } from './token-search';
import type { TokenType } from './token-types';

export const CVC_RETENTION_MS = 60 * 60 * 1000;

/** A token as stored, without its sealed data. */
export interface TokenRow {
  id: string;
  tenant_id: string;
  type: TokenType;
  mask: Record<string, unknown> | null;
  card_brand: string | null;
  fingerprint: string;
  fingerprint_expression: string;
  metadata: Record<string, string> | null;
  search_indexes: string[] | null;
  containers: string[];
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
}

/** A token's clear data, for the orchestration module that charges it (never returned to a client). */
export interface UsableToken extends TokenRow {
  data: unknown;
  cvc?: string;
}

const COLUMNS = `t.id, t.tenant_id, t.type, t.mask, t.card_brand, t.fingerprint, t.fingerprint_expression, t.metadata,
  t.search_indexes, t.containers, t.expires_at, t.created_by, t.created_at, t.modified_by, t.modified_at`;

const dataAad = (tenantId: string, tokenId: string): string => `${tenantId}:${tokenId}:data`;
const cvcAad = (tenantId: string, tokenId: string): string => `${tenantId}:${tokenId}:cvc`;

export type TokenDto = Record<string, unknown>;

/** A token a create request answers with: one it made, or an existing one it may read (deduplication). */
interface CreatedToken {
  row: TokenRow;
  transform: RuleTransform;
}

const sameContainers = (a: string[], b: string[]): boolean =>
  a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

const sameList = (a: string[] | null, b: string[] | null): boolean =>
  (a ?? []).length === (b ?? []).length && (a ?? []).every((value, i) => value === (b ?? [])[i]);

/** The lock key of one (tenant, type, fingerprint): its first 31 bits of SHA-256. */
const dedupLockKey = (tenantId: string, type: string, fingerprint: string): number =>
  createHash('sha256').update(`${tenantId}:${type}:${fingerprint}`).digest().readInt32BE(0);

export interface CursorTokenPage {
  pagination: { page_size: number; next?: string };
  data: TokenDto[];
}

/** The token object (contract section 3): `mask` alone, `data` (masked) inside a composite response. */
export function tokenDto(
  row: TokenRow,
  options: { composite?: boolean; transform?: RuleTransform } = {},
): TokenDto {
  const out: TokenDto = { id: row.id, tenant_id: row.tenant_id, type: row.type };
  if (row.mask && (options.transform ?? 'mask') === 'mask')
    out[options.composite ? 'data' : 'mask'] = row.mask;
  if (row.metadata) out.metadata = row.metadata;
  if (row.search_indexes) out.search_indexes = row.search_indexes;
  out.fingerprint = row.fingerprint;
  out.fingerprint_expression = row.fingerprint_expression;
  out.containers = row.containers;
  if (row.expires_at) out.expires_at = row.expires_at.toISOString();
  out.created_by = row.created_by;
  out.created_at = row.created_at.toISOString();
  if (row.modified_by) out.modified_by = row.modified_by;
  if (row.modified_at) out.modified_at = row.modified_at.toISOString();
  return out;
}

@Injectable()
export class TokensService {
  constructor(
    private readonly expressions: ExpressionEvaluator,
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly audit: AuditTrail,
  ) {}

  /** POST /tokenize: any shape in, the same shape out, every token created in one transaction or none. */
  @Transactional()
  async tokenize(who: Principal, body: unknown): Promise<unknown> {
    const errors: FieldErrors = {};
    if (isElement(body)) {
      const [created] = await this.createElements(who, [{ path: '', raw: body }]);
      return tokenDto(created.row, { transform: created.transform });
    }
    const slots = collectSlots(body, errors);
    if (slots.length > MAX_TOKENS_PER_REQUEST) {
      throw badRequest(
        `A tokenize request creates at most ${MAX_TOKENS_PER_REQUEST} tokens; this one has ${slots.length}.`,
        undefined,
        'too_many_tokens',
      );
    }
    if (slots.length === 0 && !Object.keys(errors).length) {
      throw badRequest('The request holds nothing to tokenize.', undefined, 'empty_tokenize');
    }
    const created = await this.createElements(who, slots, errors);
    return rebuild(
      body,
      created.map(({ row, transform }, i) =>
        typeof slots[i].raw === 'string' ? row.id : tokenDto(row, { composite: true, transform }),
      ),
    );
  }

  /** POST /tokens: one element, the token object with its mask. */
  @Transactional()
  async createOne(who: Principal, body: unknown): Promise<TokenDto> {
    if (!isPlainObject(body)) throw badRequest('The body must be a token request object with type and data.');
    const [created] = await this.createElements(who, [{ path: '', raw: body }]);
    return tokenDto(created.row, { transform: created.transform });
  }

  /**
   * Validates every slot (adding to the errors found so far), checks permissions, evaluates the
   * expressions (off the event loop), then creates in one transaction.
   */
  private async createElements(
    who: Principal,
    slots: { path: string; raw: string | Record<string, unknown> }[],
    errors: FieldErrors = {},
  ): Promise<CreatedToken[]> {
    const now = this.clock.now();
    const parsed: ParsedElement[] = [];
    for (const slot of slots) {
      const element = parseElement(slot.raw, slot.path, now, this.expressions, errors);
      if (element) parsed.push(element);
    }
    if (Object.keys(errors).length) throw validationProblem(errors);
    const refused = parsed.flatMap((el) =>
      refusedContainers(who, { id: el.id ?? '', type: el.type, containers: el.containers }).map(
        (container) => `${container}${el.path ? ` (at ${el.path})` : ''}`,
      ),
    );
    if (refused.length) throw forbidden(`token:create is not granted on ${refused.join(', ')}.`);
    const outcomes = await this.expressions.evaluate(parsed.map(expressionBatch));
    parsed.forEach((el, i) => Object.assign(el, applyEvaluation(outcomes[i], el.path, errors)));
    if (Object.keys(errors).length) throw validationProblem(errors);

    return this.db.withTransaction(async () => {
      const keys = await this.tenantKeys.keysFor(who.tenantId);
      const fingerprints = parsed.map((el) => hmacBase62(keys.fingerprint, el.fingerprintInput));
      const existing = await this.findDuplicates(who, parsed, fingerprints, now);
      await this.assertIdsFree(parsed);

      const created: CreatedToken[] = [];
      const fresh: { row: TokenRow; element: ParsedElement }[] = [];
      const seen: TokenRow[] = [];
      parsed.forEach((el, i) => {
        if (el.deduplicate) {
          const same = (row: TokenRow) =>
            row.type === el.type &&
            row.fingerprint === fingerprints[i] &&
            sameContainers(row.containers, el.containers);
          const duplicate =
            existing.find((candidate) => same(candidate.row)) ??
            seen
              .map((row) => ({ row, transform: decide(who, 'token:read', row).transform }))
              .find((c) => same(c.row));
          if (duplicate) return created.push(duplicate);
        }
        const row: TokenRow = {
          id: el.id ?? randomUUID(),
          tenant_id: who.tenantId,
          type: el.type,
          mask: el.validated.mask ?? null,
          card_brand: el.validated.brand ?? null,
          fingerprint: fingerprints[i],
          fingerprint_expression: el.fingerprintExpression,
          metadata: el.metadata,
          search_indexes: el.searchIndexes,
          containers: el.containers,
          expires_at: el.expiresAt,
          created_by: who.applicationId,
          created_at: now,
          modified_by: null,
          modified_at: null,
        };
        // A token made earlier in this request is a duplicate for the later ones on the same terms.
        if (el.deduplicate && decide(who, 'token:read', row).allowed) seen.push(row);
        fresh.push({ row, element: el });
        created.push({ row, transform: 'mask' });
      });
      await this.insertTokens(keys, fresh, now);
      for (const { row } of fresh)
        this.audit.record({
          entityType: 'token',
          entityId: row.id,
          operation: 'create',
          message: `Token created (${row.type})`,
        });
      return created;
    });
  }

  /**
   * Contract section 15: the live tokens a deduplicating element may be answered with, namely those
   * of its type and fingerprint that the caller may read (rules-aware). The containers are compared by
   * the caller. A transaction-scoped advisory lock per (tenant, type, fingerprint), taken in one order,
   * makes concurrent identical requests wait for each other, so exactly one of them creates the token.
   */
  private async findDuplicates(
    who: Principal,
    parsed: ParsedElement[],
    fingerprints: string[],
    now: Date,
  ): Promise<CreatedToken[]> {
    const wanted = parsed.flatMap((el, i) =>
      el.deduplicate ? [{ type: el.type, fingerprint: fingerprints[i] }] : [],
    );
    if (!wanted.length) return [];
    const lockKeys = [...new Set(wanted.map((w) => dedupLockKey(who.tenantId, w.type, w.fingerprint)))];
    await this.db.tx.query(
      `SELECT count(pg_advisory_xact_lock(${LOCK_KEYS.deduplication}, k))
         FROM (SELECT k FROM unnest($1::int[]) AS k ORDER BY k) AS ordered`,
      [lockKeys],
    );
    const rows: TokenRow[] = await this.db.tx.query(
      `SELECT ${COLUMNS} FROM tokens t
        WHERE t.tenant_id = $1 AND t.fingerprint = ANY($2) AND (t.expires_at IS NULL OR t.expires_at > $3)
        ORDER BY t.created_at, t.id`,
      [who.tenantId, wanted.map((w) => w.fingerprint), now],
    );
    return rows.flatMap((row) => {
      const decision = decide(who, 'token:read', row);
      return decision.allowed ? [{ row, transform: decision.transform }] : [];
    });
  }

  private async assertIdsFree(parsed: ParsedElement[]): Promise<void> {
    const ids = parsed.map((el) => el.id).filter((id): id is string => !!id);
    if (!ids.length) return;
    if (new Set(ids).size !== ids.length) throw badRequest('The request gives the same token id twice.');
    const taken: { id: string }[] = await this.db.tx.query('SELECT id FROM tokens WHERE id = ANY($1)', [ids]);
    if (taken.length) throw conflict(`A token with id ${taken[0].id} already exists.`);
  }

  /** One INSERT per table for the whole request: tokens, their search index digests, their CVCs. */
  private async insertTokens(
    keys: TenantKeys,
    fresh: { row: TokenRow; element: ParsedElement }[],
    now: Date,
  ): Promise<void> {
    if (!fresh.length) return;
    const tokenRows = fresh.map(({ row, element }) => [
      row.id,
      row.tenant_id,
      row.type,
      seal(
        keys.encryption,
        Buffer.from(JSON.stringify(element.validated.data)),
        dataAad(row.tenant_id, row.id),
      ),
      row.mask ? JSON.stringify(row.mask) : null,
      row.card_brand,
      row.fingerprint,
      row.fingerprint_expression,
      row.metadata ? JSON.stringify(row.metadata) : null,
      row.search_indexes,
      row.containers,
      row.expires_at,
      row.created_by,
      row.created_at,
    ]);
    const tokens = multiRowInsert(
      'tokens',
      [
        'id',
        'tenant_id',
        'type',
        'data',
        'mask',
        'card_brand',
        'fingerprint',
        'fingerprint_expression',
        'metadata',
        'search_indexes',
        'containers',
        'expires_at',
        'created_by',
        'created_at',
      ],
      tokenRows,
    );
    await this.db.tx.query(tokens.sql, tokens.params);
    const indexRows = fresh.flatMap(({ row, element }) =>
      [...new Set(element.indexValues)].map((value) => [
        row.id,
        row.tenant_id,
        hmac(keys.searchIndex, value),
      ]),
    );
    if (indexRows.length) {
      const indexes = multiRowInsert('token_search_indexes', ['token_id', 'tenant_id', 'digest'], indexRows);
      await this.db.tx.query(`${indexes.sql} ON CONFLICT DO NOTHING`, indexes.params);
    }
    const cvcRows = fresh
      .filter(({ element }) => element.validated.cvc)
      .map(({ row, element }) => [
        row.id,
        row.tenant_id,
        seal(keys.encryption, Buffer.from(element.validated.cvc!), cvcAad(row.tenant_id, row.id)),
        new Date(now.getTime() + CVC_RETENTION_MS),
      ]);
    if (cvcRows.length) {
      const cvcs = multiRowInsert('token_cvcs', ['token_id', 'tenant_id', 'cvc', 'expires_at'], cvcRows);
      await this.db.tx.query(cvcs.sql, cvcs.params);
    }
  }

  /** A live token of the tenant, or 404; then the rule evaluator: 404 when no rule covers it, 403 when one refuses. */
  private async findAccessible(
    who: Principal,
    id: string,
    permission: string,
    lock = false,
  ): Promise<{ row: TokenRow & { data: Buffer }; transform: RuleTransform }> {
    // The sealed data comes along (one round trip); it is opened only by the callers that need it.
    const rows: (TokenRow & { data: Buffer })[] = await this.db.tx.query(
      `SELECT ${COLUMNS}, t.data FROM tokens t WHERE t.tenant_id = $1 AND t.id = $2 AND (t.expires_at IS NULL OR t.expires_at > $3)${lock ? ' FOR UPDATE' : ''}`,
      [who.tenantId, id, this.clock.now()],
    );
    const row = rows[0];
    if (!row) throw notFound('Token');
    const decision = decide(who, permission, row);
    if (!decision.matched) throw notFound('Token');
    if (!decision.allowed) throw forbidden(`The key lacks ${permission} on this token.`);
    return { row, transform: decision.transform };
  }

  async get(who: Principal, id: string): Promise<TokenDto> {
    const { row, transform } = await this.findAccessible(who, id, 'token:read');
    return tokenDto(row, { transform });
  }

  @Transactional()
  async delete(who: Principal, id: string): Promise<void> {
    await this.db.withTransaction(async () => {
      await this.findAccessible(who, id, 'token:delete', true);
      await this.db.tx.query('DELETE FROM tokens WHERE tenant_id = $1 AND id = $2', [who.tenantId, id]);
    });
  }

  /**
   * PATCH: metadata merged (a null value removes a key); search indexes, fingerprint expression, expiry
   * replaced. Contract section 15: new expressions are evaluated over the stored data, so changing them
   * needs a reveal rule over the token; an expiry added or moved earlier is a delete, so it needs
   * `token:delete`.
   */
  @Transactional()
  async update(who: Principal, id: string, body: unknown): Promise<TokenDto> {
    if (!isPlainObject(body)) throw badRequest('The body must be an object.');
    const now = this.clock.now();
    const errors: FieldErrors = {};
    for (const key of Object.keys(body)) {
      if (key === 'data' || key === 'type')
        addFieldError(errors, key, `${key} cannot be changed: token data is immutable`);
      else if (!['metadata', 'search_indexes', 'fingerprint_expression', 'expires_at'].includes(key)) {
        addFieldError(errors, key, `property ${key} should not exist`);
      }
    }
    const patchMetadata = body.metadata === undefined ? undefined : body.metadata;
    if (patchMetadata !== undefined && patchMetadata !== null && !isPlainObject(patchMetadata)) {
      errors.metadata = ['metadata must be an object'];
    }
    const searchIndexes =
      body.search_indexes === undefined
        ? undefined
        : parseSearchIndexes(body.search_indexes, 'search_indexes', this.expressions, errors);
    const expiresAt =
      body.expires_at === undefined ? undefined : parseExpiresAt(body.expires_at, 'expires_at', now, errors);
    if (Object.keys(errors).length) throw validationProblem(errors);

    return this.db.withTransaction(async () => {
      const { row, transform } = await this.findAccessible(who, id, 'token:update', true);
      const fingerprintExpression =
        body.fingerprint_expression === undefined
          ? row.fingerprint_expression
          : parseFingerprintExpression(
              body.fingerprint_expression,
              row.type,
              'fingerprint_expression',
              this.expressions,
              errors,
            );
      let metadata = row.metadata;
      if (patchMetadata === null) metadata = null;
      else if (patchMetadata !== undefined) {
        const merged: Record<string, unknown> = { ...(row.metadata ?? {}) };
        for (const [k, v] of Object.entries(patchMetadata as Record<string, unknown>)) {
          if (v === null) delete merged[k];
          else merged[k] = v;
        }
        metadata = parseMetadata(merged, 'metadata', errors);
        if (metadata && Object.keys(metadata).length === 0) metadata = null;
      }
      if (Object.keys(errors).length) throw validationProblem(errors);

      const recompute =
        fingerprintExpression !== row.fingerprint_expression ||
        (searchIndexes !== undefined && !sameList(searchIndexes, row.search_indexes));
      if (recompute && !mayEvaluateStoredData(who, row))
        throw forbidden(
          'Changing fingerprint_expression or search_indexes evaluates them over the stored data, which needs a reveal rule with token:read covering this token.',
        );
      const earlier =
        expiresAt instanceof Date &&
        (row.expires_at === null || expiresAt.getTime() < row.expires_at.getTime());
      if (earlier && !decide(who, 'token:delete', row).allowed)
        throw forbidden('Setting expires_at, or moving it earlier, needs token:delete on this token.');

      const keys = await this.tenantKeys.keysFor(who.tenantId);
      const { data: _sealed, ...stored } = row;
      const next: TokenRow = {
        ...stored,
        metadata,
        search_indexes: searchIndexes === undefined ? row.search_indexes : searchIndexes,
        fingerprint_expression: fingerprintExpression,
        expires_at: expiresAt === undefined ? row.expires_at : expiresAt,
        modified_by: who.applicationId,
        modified_at: now,
      };
      if (recompute) {
        const data = this.decryptData(keys, row);
        const [outcomes] = await this.expressions.evaluate([
          expressionBatch({ validated: { data }, fingerprintExpression, searchIndexes: next.search_indexes }),
        ]);
        const evaluated = applyEvaluation(outcomes, '', errors);
        if (Object.keys(errors).length) throw validationProblem(errors);
        next.fingerprint = hmacBase62(keys.fingerprint, evaluated.fingerprintInput);
        await this.db.tx.query('DELETE FROM token_search_indexes WHERE token_id = $1', [row.id]);
        const indexRows = [...new Set(evaluated.indexValues)].map((v) => [
          row.id,
          row.tenant_id,
          hmac(keys.searchIndex, v),
        ]);
        if (indexRows.length) {
          const insert = multiRowInsert(
            'token_search_indexes',
            ['token_id', 'tenant_id', 'digest'],
            indexRows,
          );
          await this.db.tx.query(insert.sql, insert.params);
        }
      }
      await this.db.tx.query(
        `UPDATE tokens SET metadata = $3, search_indexes = $4, fingerprint_expression = $5, fingerprint = $6,
                expires_at = $7, modified_by = $8, modified_at = $9
          WHERE tenant_id = $1 AND id = $2`,
        [
          who.tenantId,
          row.id,
          next.metadata ? JSON.stringify(next.metadata) : null,
          next.search_indexes,
          next.fingerprint_expression,
          next.fingerprint,
          next.expires_at,
          next.modified_by,
          next.modified_at,
        ],
      );
      return tokenDto(next, { transform });
    });
  }

  /** GET /tokens: `type`, `container`, `fingerprint`, `metadata.<name>`, `page`, `size`. */
  async list(who: Principal, query: Record<string, unknown>): Promise<OffsetPage<TokenDto>> {
    const errors: FieldErrors = {};
    const filters = emptyFilters();
    const paging = { page: 1, size: DEFAULT_PAGE_SIZE };
    for (const [key, raw] of Object.entries(query)) {
      const values = Array.isArray(raw) ? raw : [raw];
      if (values.some((v) => typeof v !== 'string')) {
        addFieldError(errors, key, `${key} must be a plain value`);
        continue;
      }
      const strings = values as string[];
      if (key === 'page' || key === 'size') {
        const n = Number(strings[0]);
        const max = key === 'size' ? MAX_PAGE_SIZE : Number.MAX_SAFE_INTEGER;
        if (!/^\d+$/.test(strings[0]) || n < 1 || n > max)
          addFieldError(
            errors,
            key,
            `${key} must be an integer from 1${key === 'size' ? ` to ${MAX_PAGE_SIZE}` : ''}`,
          );
        else paging[key] = n;
      } else if (key === 'type') filters.types.push(...strings);
      else if (key === 'container') filters.containers.push(...strings);
      else if (key === 'fingerprint') filters.fingerprints.push(...strings);
      else if (/^metadata\.[A-Za-z0-9_-]{1,128}$/.test(key))
        filters.metadata.push(...strings.map((v): [string, string] => [key.slice(9), v]));
      else addFieldError(errors, key, `property ${key} should not exist`);
    }
    if (Object.keys(errors).length) throw validationProblem(errors);
    return this.findPage(who, 'token:read', filters, paging);
  }

  /** POST /tokens/search `{query, page?, size?}`. */
  async search(
    who: Principal,
    body: { query: string; page: number; size: number },
  ): Promise<OffsetPage<TokenDto>> {
    const errors: FieldErrors = {};
    const filters = parseSearchQuery(body.query, errors);
    if (Object.keys(errors).length) throw validationProblem(errors);
    return this.findPage(who, 'token:search', filters, body);
  }

  /** The WHERE clause shared by lists and searches: filters plus exactly the tokens the caller may see. */
  private async tokenConditions(
    who: Principal,
    permission: string,
    filters: TokenFilters,
    p: SqlParams,
  ): Promise<string> {
    const where = [
      `t.tenant_id = ${p.add(who.tenantId)}`,
      `(t.expires_at IS NULL OR t.expires_at > ${p.add(this.clock.now())})`,
    ];
    for (const id of filters.ids) where.push(`t.id = ${p.add(id)}`);
    for (const type of filters.types) where.push(`t.type = ${p.add(type)}`);
    for (const fingerprint of filters.fingerprints) where.push(`t.fingerprint = ${p.add(fingerprint)}`);
    for (const container of filters.containers) {
      where.push(
        `EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length(${p.add(container)}::text)) = $${p.values.length}::text)`,
      );
    }
    for (const [name, value] of filters.metadata)
      where.push(`t.metadata ->> ${p.add(name)} = ${p.add(value)}`);
    if (filters.dataValues.length) {
      const keys = await this.tenantKeys.keysFor(who.tenantId);
      for (const value of filters.dataValues) {
        where.push(
          `EXISTS (SELECT 1 FROM token_search_indexes s WHERE s.tenant_id = t.tenant_id AND s.token_id = t.id AND s.digest = ${p.add(hmac(keys.searchIndex, value))})`,
        );
      }
    }
    where.push(accessPredicate(who, permission, p.values));
    return where.join(' AND ');
  }

  private async findPage(
    who: Principal,
    permission: string,
    filters: TokenFilters,
    paging: { page: number; size: number },
  ): Promise<OffsetPage<TokenDto>> {
    const p = new SqlParams();
    const condition = await this.tokenConditions(who, permission, filters, p);
    const [{ total }]: { total: number }[] = await this.db.tx.query(
      `SELECT count(*)::int AS total FROM tokens t WHERE ${condition}`,
      p.values,
    );
    const rows: TokenRow[] = await this.db.tx.query(
      `SELECT ${COLUMNS} FROM tokens t WHERE ${condition} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(paging.size)} OFFSET ${p.add((paging.page - 1) * paging.size)}`,
      p.values,
    );
    return offsetPage(
      rows.map((row) => tokenDto(row, { transform: decide(who, permission, row).transform })),
      total,
      paging,
    );
  }

  /**
   * Keyset pages newest first, for the v2 list and search (Basis Theory's cursor-paginated token
   * endpoints): `pagination.next` is the cursor of the next page, absent on the last one.
   */
  private async findCursorPage(
    who: Principal,
    permission: string,
    filters: TokenFilters,
    paging: { start?: string; size: number },
  ): Promise<CursorTokenPage> {
    const p = new SqlParams();
    let condition = await this.tokenConditions(who, permission, filters, p);
    if (paging.start !== undefined) {
      const [createdAt, id] = decodeCursor(paging.start, [CURSOR_TIME, CURSOR_UUID]);
      condition += ` AND (t.created_at, t.id) < (${p.add(createdAt)}::timestamptz, ${p.add(id)}::uuid)`;
    }
    const rows: (TokenRow & { cursor_at: string })[] = await this.db.tx.query(
      `SELECT ${COLUMNS}, ${cursorTimeSql('t.created_at')} AS cursor_at
         FROM tokens t WHERE ${condition} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(paging.size + 1)}`,
      p.values,
    );
    const page = rows.slice(0, paging.size);
    const last = page[page.length - 1];
    return {
      pagination: {
        page_size: paging.size,
        ...(rows.length > paging.size && last ? { next: encodeCursor([last.cursor_at, last.id]) } : {}),
      },
      data: page.map(({ cursor_at: _cursor, ...row }) =>
        tokenDto(row, { transform: decide(who, permission, row).transform }),
      ),
    };
  }

  /** GET /v2/tokens: `type`, `container`, `fingerprint`, `metadata` (a JSON object), `start`, `size`. */
  async listV2(who: Principal, query: Record<string, unknown>): Promise<CursorTokenPage> {
    const errors: FieldErrors = {};
    const filters = emptyFilters();
    let size = DEFAULT_PAGE_SIZE;
    let start: string | undefined;
    for (const [key, raw] of Object.entries(query)) {
      const values = Array.isArray(raw) ? raw : [raw];
      if (values.some((v) => typeof v !== 'string')) {
        addFieldError(errors, key, `${key} must be a plain value`);
        continue;
      }
      const strings = values as string[];
      if (key === 'size') {
        const n = Number(strings[0]);
        if (!/^\d+$/.test(strings[0]) || n < 1 || n > MAX_PAGE_SIZE)
          addFieldError(errors, key, `size must be an integer from 1 to ${MAX_PAGE_SIZE}`);
        else size = n;
      } else if (key === 'start') start = strings[0];
      else if (key === 'type') filters.types.push(...strings);
      else if (key === 'container') filters.containers.push(...strings);
      else if (key === 'fingerprint') filters.fingerprints.push(...strings);
      else if (key === 'metadata') {
        for (const text of strings) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          if (!isPlainObject(parsed) || Object.values(parsed).some((v) => typeof v !== 'string'))
            addFieldError(errors, 'metadata', 'metadata must be a JSON object of string values');
          else filters.metadata.push(...Object.entries(parsed as Record<string, string>));
        }
      } else addFieldError(errors, key, `property ${key} should not exist`);
    }
    if (Object.keys(errors).length) throw validationProblem(errors);
    return this.findCursorPage(who, 'token:read', filters, { start, size });
  }

  /** POST /v2/tokens/search `{query, start?, size?}`. */
  async searchV2(
    who: Principal,
    body: { query: string; start?: string; size: number },
  ): Promise<CursorTokenPage> {
    const errors: FieldErrors = {};
    const filters = parseSearchQuery(body.query, errors);
    if (Object.keys(errors).length) throw validationProblem(errors);
    return this.findCursorPage(who, 'token:search', filters, body);
  }

  private decryptData(keys: TenantKeys, row: TokenRow & { data: Buffer }): unknown {
    return JSON.parse(
      open(keys.encryption, row.data, dataAad(row.tenant_id, row.id)).toString('utf8'),
    ) as unknown;
  }

  /**
   * For orchestration: the clear card data of a live token the caller may use (`token:use` through the
   * rule evaluator), with its CVC if still retained. Never leaves the process.
   */
  async loadForUse(who: Principal, id: string): Promise<UsableToken> {
    const { row: found } = await this.findAccessible(who, id, 'token:use');
    const keys = await this.tenantKeys.keysFor(who.tenantId);
    const data = this.decryptData(keys, found);
    const { data: _sealed, ...row } = found;
    const cvcs: { cvc: Buffer }[] = await this.db.tx.query(
      'SELECT cvc FROM token_cvcs WHERE token_id = $1 AND expires_at > $2',
      [row.id, this.clock.now()],
    );
    const cvc = cvcs[0]
      ? open(keys.encryption, cvcs[0].cvc, cvcAad(row.tenant_id, row.id)).toString('utf8')
      : undefined;
    return { ...row, data, cvc };
  }

  /** The CVC is deleted after its first use in an authorization. */
  async forgetCvc(tenantId: string, tokenId: string): Promise<void> {
    await this.db.tx.query('DELETE FROM token_cvcs WHERE tenant_id = $1 AND token_id = $2', [
      tenantId,
      tokenId,
    ]);
  }
}
