import { TokensErrorCode, TokensException } from '../tokens.errors';
import { ValidationException } from '../../../common/errors/domain.exception';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { RuleTransform } from '../../../common/auth/access-rule';
import { mayHoldPermission, type Principal } from '../../../common/auth/principal';
import { hmacBase62, TenantKeys, TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { FieldErrors } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { Metrics } from '../../../common/metrics/metrics';
import type { Change } from '../../../common/unit-of-work/change';
import type { ChangeWrites } from '../../../common/unit-of-work/write-batch';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { enumerableNumbers, pendingGroups } from '../enumeration/card-enumeration';
import {
  CardEnumerationConflict,
  CardEnumerationGuard,
  CardEnumerationRefused,
} from '../enumeration/card-enumeration.service';
import { ExpressionEvaluator } from '../expressions/expression-evaluator';
import { decide, refusedContainers } from '../access/token-access';
import { TokenDto, tokenDto, tokenEvent } from '../token-answer';
import {
  applyEvaluation,
  collectSlots,
  expressionBatch,
  isElement,
  isPlainObject,
  MAX_TOKENS_PER_REQUEST,
  parseElement,
  ParsedElement,
  rebuild,
  Slot,
  type CreateOneOptions,
} from './tokenize-request';
import { TokenRow, TokensRepository } from '../tokens.repository';
import { sealedRows } from './sealed-rows';
import { PublicTokenizeLimit } from './public-tokenize-limit';

export { CVC_RETENTION_MS } from './sealed-rows';

/**
 * How many times a one-statement tokenize counted by the card enumeration guard is tried again when other
 * requests count in its groups between its read (or snapshot) and its write; then it locks the groups
 * (a transaction), which always goes through. Checkout traffic rarely shares a group; an enumeration
 * attempt, all in one group, ends up queued on the lock.
 */
const OPTIMISTIC_TRIES = 3;

/**
 * A create request validated and its expressions evaluated, at `now`. `numbers[i]`: the card numbers
 * the card enumeration guard counts for element i if the caller may read or search the token it makes
 * (none for a caller that holds neither token:read nor token:search anywhere); `enumerable[i]`: those
 * numbers whoever the caller, kept as pending groups on a token whose number is not counted at tokenize.
 */
interface Prepared {
  parsed: ParsedElement[];
  now: Date;
  numbers: string[][];
  enumerable: string[][];
}

/**
 * A token a create request answers with: one it made, or an existing one it may read (deduplication).
 * `readable`: the caller may read it, so the answer carries its fingerprint.
 */
interface CreatedToken {
  row: TokenRow;
  transform: RuleTransform;
  readable: boolean;
}

const sameContainers = (a: string[], b: string[]): boolean =>
  a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

/** Creating tokens: `POST /tokenize` (any shape) and `POST /tokens` (one element), with deduplication. */
@Injectable()
export class TokenizeService {
  constructor(
    private readonly expressions: ExpressionEvaluator,
    private readonly tokens: TokensRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly enumeration: CardEnumerationGuard,
    private readonly work: UnitOfWork,
    private readonly publicLimit: PublicTokenizeLimit,
  ) {}

  /** POST /tokenize: any shape in, the same shape out, every token created in one change or none. */
  async tokenize(origin: RequestOrigin, body: unknown): Promise<unknown> {
    const who = origin.actor;
    const errors: FieldErrors = {};
    if (isElement(body)) return this.createOne(origin, body);
    const slots = collectSlots(body, errors);
    this.publicLimit.checkSize(
      origin,
      slots.map((slot) => slot.path),
    );
    if (slots.length > MAX_TOKENS_PER_REQUEST) {
      throw new TokensException(
        TokensErrorCode.TooManyTokens,
        `A tokenize request creates at most ${MAX_TOKENS_PER_REQUEST} tokens; this one has ${slots.length}.`,
      );
    }
    if (slots.length === 0 && !Object.keys(errors).length) {
      throw new TokensException(TokensErrorCode.EmptyTokenize, 'The request holds nothing to tokenize.');
    }
    await this.publicLimit.count(origin);
    const prepared = await this.prepare(who, slots, errors);
    return this.create(origin, prepared, (created) =>
      rebuild(
        body,
        created.map(({ row, transform, readable }, i) =>
          typeof slots[i].raw === 'string' ? row.id : tokenDto(row, { composite: true, transform, readable }),
        ),
      ),
    );
  }

  /**
   * POST /tokens: one element, the token object with its mask. A wallet payload the vault verified and
   * decrypted (docs/wallets.md) comes `fromWallet`: a public key or a session may make it a `network_token`.
   */
  async createOne(
    origin: RequestOrigin,
    body: unknown,
    { fromWallet = false, alsoWrite }: CreateOneOptions = {},
  ): Promise<TokenDto> {
    if (!isPlainObject(body))
      throw TokensException.badRequest('The body must be a token request object with type and data.');
    await this.publicLimit.count(origin);
    const prepared = await this.prepare(origin.actor, [{ path: '', raw: body }], {}, fromWallet);
    return this.create(
      origin,
      prepared,
      ([created]) => tokenDto(created.row, { transform: created.transform, readable: created.readable }),
      alsoWrite && ((change, [created]) => alsoWrite(change, created.row.id)),
    );
  }

  /**
   * Validates every slot (adding to the errors found so far), checks permissions and evaluates the
   * expressions (off the event loop); reads and writes nothing.
   */
  private async prepare(
    who: Principal,
    slots: Slot[],
    errors: FieldErrors = {},
    fromWallet = false,
  ): Promise<Prepared> {
    const now = this.clock.now();
    const parsed: ParsedElement[] = [];
    for (const slot of slots) {
      const element = parseElement(slot.raw, slot.path, now, this.expressions, errors);
      if (element) parsed.push(element);
    }
    if (Object.keys(errors).length) throw new ValidationException(errors);
    // A network token with its cryptogram is a payment credential: in a browser or an app it comes
    // only from a wallet payload the vault verified and decrypted itself, never as typed-in data.
    if (!fromWallet && who.applicationType === 'public' && parsed.some((el) => el.type === 'network_token'))
      throw TokensException.forbidden(
        'A public key or a session creates network_token tokens only from a wallet payload (POST /wallets/...).',
      );
    const refused = parsed.flatMap((el) =>
      refusedContainers(who, { id: el.id ?? '', type: el.type, containers: el.containers }).map(
        (container) => `${container}${el.path ? ` (at ${el.path})` : ''}`,
      ),
    );
    if (refused.length)
      throw TokensException.forbidden(`token:create is not granted on ${refused.join(', ')}.`);
    const outcomes = await this.expressions.evaluate(parsed.map(expressionBatch), who.tenantId);
    parsed.forEach((el, i) => Object.assign(el, applyEvaluation(outcomes[i], el.path, errors)));
    if (Object.keys(errors).length) throw new ValidationException(errors);
    const ids = parsed.map((el) => el.id).filter((id): id is string => !!id);
    if (new Set(ids).size !== ids.length)
      throw TokensException.badRequest('The request gives the same token id twice.');

    const counted = mayHoldPermission(who, 'token:read') || mayHoldPermission(who, 'token:search');
    const enumerable = parsed.map((el) => enumerableNumbers(el));
    return { parsed, now, numbers: enumerable.map((n) => (counted ? n : [])), enumerable };
  }

  /**
   * Creates the tokens and answers `answer(created)`, the response the change commits with (its audit
   * rows, events and idempotency record). Generated ids and no deduplication: nothing to lock, so the
   * change is one statement (`UnitOfWork.statement`); card numbers the enumeration guard counts are
   * decided by that statement (several numbers) or by a read just before it (one), and it writes only if
   * no other request counted in their groups meanwhile (else it is tried again, and, after
   * `OPTIMISTIC_TRIES`, as a transaction that locks the groups, which always goes through; on the
   * embedded database, at once). Otherwise a transaction: the deduplication lock and reads, the
   * purge of expired tokens holding a given id, the guard's lock and count, and the insert that answers
   * which ids were taken. A refusal by the guard writes nothing but its audit row, in a change of its own
   * after the rollback.
   */
  private async create<T>(
    origin: RequestOrigin,
    prepared: Prepared,
    answer: (created: CreatedToken[]) => T,
    alsoWrite?: (change: ChangeWrites, created: CreatedToken[]) => Promise<void>,
  ): Promise<T> {
    const who = origin.actor;
    const keys = await this.tenantKeys.keysFor(who.tenantId);
    const counted = prepared.numbers.some((numbers) => numbers.length > 0);
    const locked =
      !prepared.parsed.every((el) => el.id === undefined && !el.deduplicate) ||
      (counted && !this.enumeration.optimistic);
    const run = async (change: Change) => {
      const created = await this.write(change, who, keys, prepared, prepared.numbers);
      await alsoWrite?.(change, created);
      return answer(created);
    };
    try {
      for (let tries = 1; !locked && tries <= OPTIMISTIC_TRIES; tries++) {
        try {
          return await this.work.statement(origin, run);
        } catch (error) {
          if (!(error instanceof CardEnumerationConflict)) throw error;
          this.metrics.cardEnumerationConflict();
        }
      }
      return await this.work.transaction(origin, run);
    } catch (error) {
      if (error instanceof CardEnumerationRefused) await this.enumeration.refused(who);
      throw error;
    }
  }

  /**
   * The writes of a create request, in `change` (a transaction, or one statement, where `numbers`
   * is empty). The card numbers of the tokens it makes that the caller may read or search (whose
   * fingerprint it learns, from the answer or by searching for it) are counted by the enumeration
   * guard before anything is written. A token whose numbers are not counted (`enumerable` but not
   * `numbers`, or a token the caller may neither read nor search) keeps their groups: its first read that
   * would show the fingerprint counts it. A deduplicated answer the caller may read counts its numbers
   * too (a token found by its fingerprint tells that fingerprint).
   */
  private async write(
    change: Change,
    who: Principal,
    keys: TenantKeys,
    { parsed, now, enumerable }: Prepared,
    numbers: string[][],
  ): Promise<CreatedToken[]> {
    const fingerprints = parsed.map((el) => hmacBase62(keys.fingerprint, el.fingerprintInput));
    const existing = await this.findDuplicates(change, who, parsed, fingerprints, now);

    const created: CreatedToken[] = [];
    const fresh: { row: TokenRow; element: ParsedElement }[] = [];
    const counted: string[] = [];
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
            .map((row) => ({ row, transform: decide(who, 'token:read', row).transform, readable: true }))
            .find((c) => same(c.row));
        if (duplicate) {
          if (duplicate.readable && numbers[i]?.length) counted.push(...numbers[i]);
          return created.push(duplicate);
        }
      }
      const row: TokenRow = {
        id: el.id ?? randomUUID(),
        tenant_id: who.tenantId,
        type: el.type,
        mask: el.validated.mask ?? null,
        card_brand: el.validated.brand ?? null,
        card_bin: el.validated.bin ?? null,
        fingerprint: fingerprints[i],
        fingerprint_groups: null,
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
      const read = decide(who, 'token:read', row);
      // A token made earlier in this request is a duplicate for the later ones on the same terms.
      if (el.deduplicate && read.allowed) seen.push(row);
      fresh.push({ row, element: el });
      created.push({ row, transform: 'mask', readable: read.allowed });
      // Counted when the caller learns the fingerprint: from the answer, or by searching `fingerprint:`;
      // otherwise its groups wait for the first read that would show it.
      if (numbers[i]?.length && (read.allowed || decide(who, 'token:search', row).allowed))
        counted.push(...numbers[i]);
      else row.fingerprint_groups = pendingGroups(keys.fingerprint, enumerable[i] ?? []);
    });
    await this.enumeration.count(change, who, keys, counted, now);
    const given = fresh.filter(({ element }) => element.id !== undefined).map(({ row }) => row.id);
    await this.tokens.purgeExpired(change, who.tenantId, given, now);
    await this.insert(change, keys, fresh, now);
    change.audit(
      ...fresh.map(({ row }) => ({
        entityType: 'token' as const,
        entityId: row.id,
        operation: 'create' as const,
        message: `Token created (${row.type})`,
        tokenType: row.type,
      })),
    );
    // One event per token made (a deduplicated answer made none), written with the change.
    change.emit(...fresh.map(({ row }) => tokenEvent('token:created', row)));
    if (fresh.length) {
      const types = fresh.map(({ row }) => row.type);
      change.afterCommit(() => this.metrics.tokensCreated(types));
    }
    return created;
  }

  /**
   * The live tokens a deduplicating element may be answered with, namely those
   * of its type and fingerprint that the caller may read (rules-aware), found under the deduplication
   * lock of each (type, fingerprint). The containers are compared by the caller.
   */
  private async findDuplicates(
    change: Change,
    who: Principal,
    parsed: ParsedElement[],
    fingerprints: string[],
    now: Date,
  ): Promise<CreatedToken[]> {
    const wanted = parsed.flatMap((el, i) =>
      el.deduplicate ? [{ type: el.type, fingerprint: fingerprints[i] }] : [],
    );
    if (!wanted.length) return [];
    await this.tokens.lockForDeduplication(change, who.tenantId, wanted);
    const rows = await this.tokens.findLiveByFingerprints(
      change,
      who.tenantId,
      wanted.map((w) => w.fingerprint),
      now,
    );
    return rows.flatMap((row) => {
      const decision = decide(who, 'token:read', row);
      return decision.allowed ? [{ row, transform: decision.transform, readable: true }] : [];
    });
  }

  /**
   * One write for the whole request: tokens (sealed), their search index digests, their CVCs (sealed,
   * apart, for an hour). An id already taken is a 409, decided by the primary key: in a transaction the
   * insert answers the ids it wrote and the 409 names the taken one; in one statement (generated ids, never
   * taken) the insert refuses the whole change.
   */
  private async insert(
    change: Change,
    keys: TenantKeys,
    fresh: { row: TokenRow; element: ParsedElement }[],
    now: Date,
  ): Promise<void> {
    if (!fresh.length) return;
    const rows = sealedRows(keys, fresh, now);
    await this.tokens.insert(
      change,
      rows,
      change.mode === 'statement'
        ? {
            refused: () =>
              new TokensException(TokensErrorCode.Conflict, 'A token with one of these ids already exists.'),
          }
        : {
            named: (id) =>
              new TokensException(TokensErrorCode.Conflict, `A token with id ${id} already exists.`),
          },
    );
  }
}
