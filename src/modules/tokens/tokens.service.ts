import { TokensException } from './tokens.errors';
import { ValidationException } from '../../common/errors/domain.exception';
import { Injectable } from '@nestjs/common';
import type { RuleTransform } from '../../common/auth/access-rule';
import type { Principal } from '../../common/auth/principal';
import { hmac, hmacBase62, TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { FieldErrors } from '../../common/errors/problem.exception';
import { Clock } from '../../common/jobs/clock';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import type { UpdateTokenDto } from './dto/update-token.dto';
import { enumerableNumbers, pendingGroups } from './enumeration/card-enumeration';
import { CardEnumerationGuard } from './enumeration/card-enumeration.service';
import { ExpressionEvaluator } from './expressions/expression-evaluator';
import { decide, mayEvaluateStoredData } from './access/token-access';
import { normalizeTokenId } from './data/token-id';
import { openCvc, openData } from './data/seal-data';
import { TokenDto, tokenDto, tokenEvent } from './token-answer';
import {
  applyEvaluation,
  expressionBatch,
  isPlainObject,
  mergeMetadata,
  parseExpiresAt,
  parseFingerprintExpression,
  parseSearchIndexes,
} from './tokenize/tokenize-request';
import { SealedToken, TokenRow, TokensRepository } from './tokens.repository';
import { revealedOf, TokenReads } from './token-reads';

export type { CursorTokenPage, TokenDto } from './token-answer';
export type { TokenRow } from './tokens.repository';
export { CardEnumerationRefused } from './enumeration/card-enumeration.service';
export { normalizeTokenId } from './data/token-id';

/** A token's clear data, for the orchestration module that charges it (never returned to a client). */
export interface UsableToken extends TokenRow {
  data: unknown;
  cvc?: string;
  /** A `network_token`'s one-time cryptogram, while retained (an hour at most, until its first authorization). */
  cryptogram?: string;
}

const sameList = (a: string[] | null, b: string[] | null): boolean =>
  (a ?? []).length === (b ?? []).length && (a ?? []).every((value, i) => value === (b ?? [])[i]);

/**
 * Reading, updating and deleting a token; and tokens' clear data for orchestration and the proxy. Lists
 * and searches are `TokenSearchService`'s; how a read shows tokens is `TokenReads`'.
 */
@Injectable()
export class TokensService {
  constructor(
    private readonly expressions: ExpressionEvaluator,
    private readonly tokens: TokensRepository,
    private readonly reads: TokenReads,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly enumeration: CardEnumerationGuard,
    private readonly work: UnitOfWork,
  ) {}

  /**
   * A live token of the tenant, or 404; then the rule evaluator: 404 when no rule covers it, 403 when one
   * refuses. Given a change, the token is locked `FOR UPDATE` in it (a write); else read from the pool.
   */
  private async findAccessible(
    who: Principal,
    id: string,
    permission: string,
    change?: Change,
  ): Promise<{ row: SealedToken; transform: RuleTransform }> {
    const found = await this.accessible(who, id, permission, change);
    if (!found) throw TokensException.notFound();
    return found;
  }

  /** The token if live and covered by a rule of the caller; undefined if not (never told apart); 403 when refused. */
  private async accessible(
    who: Principal,
    id: string,
    permission: string,
    change?: Change,
  ): Promise<{ row: SealedToken; transform: RuleTransform } | undefined> {
    // The sealed data comes along (one round trip); it is opened only by the callers that need it.
    const now = this.clock.now();
    const row = change
      ? await this.tokens.lockLive(change, who.tenantId, id, now)
      : await this.tokens.findLive(who.tenantId, id, now);
    if (!row) return undefined;
    const decision = decide(who, permission, row);
    if (!decision.matched) return undefined;
    if (!decision.allowed) throw TokensException.forbidden(`The key lacks ${permission} on this token.`);
    return { row, transform: decision.transform };
  }

  /** GET /tokens/{id}: the read's own audit row is the audit interceptor's; a reveal adds its own. */
  async get(origin: RequestOrigin, id: string): Promise<TokenDto> {
    const who = origin.actor;
    const { row, transform } = await this.findAccessible(who, id, 'token:read');
    const revealed =
      transform === 'reveal' ? await this.reads.reveal(who, [row]) : new Map<string, unknown>();
    const shown = await this.enumeration.showable(who, [row]);
    await this.reads.recordReveals(origin, [row], revealed);
    return tokenDto(row, {
      transform,
      revealed: revealedOf(revealed, row.id),
      readable: shown.has(row.id),
    });
  }

  /** DELETE /tokens/{id}: the token, its search indexes and CVC, with its audit row and event. */
  async delete(origin: RequestOrigin, id: string): Promise<void> {
    const who = origin.actor;
    await this.work.transaction(origin, async (change) => {
      const { row } = await this.findAccessible(who, id, 'token:delete', change);
      await this.tokens.delete(change, who.tenantId, id);
      const { data: _sealed, ...deleted } = row;
      change.audit({
        entityType: 'token',
        entityId: id,
        operation: 'delete',
        message: 'Token deleted',
        tokenType: row.type,
      });
      change.emit(tokenEvent('token:deleted', deleted));
    });
  }

  /**
   * PATCH: metadata merged (a null value removes a key); search indexes, fingerprint expression, expiry
   * replaced. New expressions are evaluated over the stored data, so changing them
   * needs a reveal rule over the token; an expiry added or moved earlier is a delete, so it needs
   * `token:delete`.
   */
  async update(origin: RequestOrigin, id: string, body: UpdateTokenDto): Promise<TokenDto> {
    const who = origin.actor;
    const raw: unknown = body; // UpdateTokenPipe checks this over HTTP; a direct caller may pass anything
    if (!isPlainObject(raw)) throw TokensException.badRequest('The body must be an object.');
    const now = this.clock.now();
    const errors: FieldErrors = {};
    const searchIndexes =
      body.search_indexes === undefined
        ? undefined
        : parseSearchIndexes(body.search_indexes, 'search_indexes', this.expressions, errors);
    const expiresAt =
      body.expires_at === undefined ? undefined : parseExpiresAt(body.expires_at, 'expires_at', now, errors);
    if (Object.keys(errors).length) throw new ValidationException(errors);
    const keys = await this.tenantKeys.keysFor(who.tenantId);

    return this.work.transaction(origin, async (change) => {
      const { row, transform } = await this.findAccessible(who, id, 'token:update', change);
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
      const metadata = mergeMetadata(row.metadata, body.metadata, errors);
      if (Object.keys(errors).length) throw new ValidationException(errors);

      const recompute =
        fingerprintExpression !== row.fingerprint_expression ||
        (searchIndexes !== undefined && !sameList(searchIndexes, row.search_indexes));
      if (recompute && !mayEvaluateStoredData(who, row))
        throw TokensException.forbidden(
          'Changing fingerprint_expression or search_indexes evaluates them over the stored data, which needs a reveal rule with token:read covering this token.',
        );
      const earlier =
        expiresAt instanceof Date &&
        (row.expires_at === null || expiresAt.getTime() < row.expires_at.getTime());
      if (earlier && !decide(who, 'token:delete', row).allowed)
        throw TokensException.forbidden(
          'Setting expires_at, or moving it earlier, needs token:delete on this token.',
        );

      const { data: _sealed, data_key: _generation, ...stored } = row;
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
        const [outcomes] = await this.expressions.evaluate(
          [
            expressionBatch({
              // Cached before the change opened; a generation made since is read in the change.
              validated: {
                data: openData(await this.tenantKeys.keysWith(who.tenantId, [row.data_key], change), row),
              },
              fingerprintExpression,
              searchIndexes: next.search_indexes,
            }),
          ],
          who.tenantId,
        );
        const evaluated = applyEvaluation(outcomes, '', errors);
        if (Object.keys(errors).length) throw new ValidationException(errors);
        next.fingerprint = hmacBase62(keys.fingerprint, evaluated.fingerprintInput);
        // A new fingerprint is a new answer: counted at its first read if it holds a card number.
        next.fingerprint_groups = pendingGroups(
          keys.fingerprint,
          enumerableNumbers({
            type: row.type,
            validated: { data: {} },
            fingerprintInput: evaluated.fingerprintInput,
          }),
        );
        const digests = [...new Set(evaluated.indexValues)].map((v) => hmac(keys.searchIndex, v));
        await this.tokens.replaceSearchIndexes(change, row.tenant_id, row.id, digests);
      }
      await this.tokens.update(change, who.tenantId, row.id, next);
      change.audit({
        entityType: 'token',
        entityId: id,
        operation: 'update',
        message: 'Token updated',
        tokenType: row.type,
      });
      change.emit(tokenEvent('token:updated', next));
      // The answer to a PATCH is masked even through a reveal rule: only reads reveal. Its
      // fingerprint only to a caller that may read the token, once counted as a read counts it.
      const readable = decide(who, 'token:read', next).allowed;
      const shown = readable ? await this.enumeration.showable(who, [next], change) : new Set<string>();
      return tokenDto(next, { transform, readable: shown.has(next.id) });
    });
  }

  /**
   * For orchestration and the proxy: the clear data of a live token the caller may use (`token:use`
   * through the rule evaluator), with a card's CVC or a network token's cryptogram if still retained. Never leaves the process. `id` is
   * a token id as a client wrote it (a uuid in either case).
   */
  async loadForUse(who: Principal, id: string): Promise<UsableToken | undefined> {
    const accessible = await this.accessible(who, normalizeTokenId(id), 'token:use');
    if (!accessible) return undefined;
    const found = accessible.row;
    const { data: _sealed, data_key: _generation, ...row } = found;
    const cvc = await this.tokens.findLiveCvc(row.tenant_id, row.id, this.clock.now());
    const keys = await this.tenantKeys.keysWith(who.tenantId, [
      found.data_key,
      ...(cvc ? [cvc.dataKey] : []),
    ]);
    const data = openData(keys, found);
    const secret = cvc ? openCvc(keys, row, cvc) : undefined;
    // A network token's cryptogram sits where a card's CVC does; it is handed over as what it is, so
    // that nothing treating `cvc` as a card's (the proxy) ever sees it.
    if (row.type === 'network_token') return { ...row, data, cryptogram: secret };
    return { ...row, data, cvc: secret };
  }

  /** The token if the caller may use it (`token:use` through its rules), without its data; else undefined. */
  async usableRow(who: Principal, id: string): Promise<TokenRow | undefined> {
    const accessible = await this.accessible(who, normalizeTokenId(id), 'token:use');
    if (!accessible) return undefined;
    const { data: _sealed, ...row } = accessible.row;
    return row;
  }

  /**
   * Whether the caller may be told if this token's card is the same as another's (a stored card found by
   * fingerprint): that tells as much as its fingerprint, so the card enumeration guard counts it, in
   * `change`, as a read that shows it would. False past the limit; `fingerprintRefused` then records it.
   */
  async comparable(who: Principal, row: TokenRow, change: Change): Promise<boolean> {
    return (await this.enumeration.showable(who, [row], change)).has(row.id);
  }

  /** A comparison refused by the card enumeration guard: its audit row and metric, once the change rolled back. */
  fingerprintRefused(who: Principal): Promise<void> {
    return this.enumeration.refused(who, 'Card comparison refused: card enumeration suspected');
  }

  /**
   * Those of these token ids the caller may read now (`token:read` through the rule evaluator, a session
   * with its authorizer) and whose fingerprint the card enumeration guard lets it see (counted now if
   * it was not yet, withheld past the limit): the tokens whose fingerprint another module may show it.
   * A token deleted or expired is in no one's set. Called inside another module's change, it reads and
   * counts in that change; otherwise it reads from the pool and counts in a change of its own.
   */
  async readableTokens(who: Principal, ids: string[], change?: Change): Promise<Set<string>> {
    const rows = await this.tokens.findLiveByIds(
      change ?? this.work.reader,
      who.tenantId,
      [...new Set(ids)],
      this.clock.now(),
    );
    return this.enumeration.showable(
      who,
      rows.filter((row) => decide(who, 'token:read', row).allowed),
      change,
    );
  }

  /** The CVC is deleted after its first use in an authorization, in the change that records it. */
  async forgetCvc(change: Change, tenantId: string, tokenId: string): Promise<void> {
    await this.tokens.deleteCvc(change, tenantId, tokenId);
  }
}
