import { Injectable } from '@nestjs/common';
import type { AuditEntry } from '../../common/audit/audit.types';
import type { Principal } from '../../common/auth/principal';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { decide, reveals } from './access/token-access';
import { openData } from './data/seal-data';
import { revealedData } from './data/validate-data';
import { CardEnumerationGuard } from './enumeration/card-enumeration.service';
import { TokenDto, tokenDto } from './token-answer';
import { SealedToken, TokenRow, TokensRepository } from './tokens.repository';

/** The clear data a read through a reveal rule shows for one token, if it revealed that token's. */
export const revealedOf = (revealed: Map<string, unknown>, id: string): { data: unknown } | undefined =>
  revealed.has(id) ? { data: revealed.get(id) } : undefined;

/**
 * How a read shows tokens: each as its deciding rule says (masked, redacted, or revealed, with the reveal's
 * audit rows), and its fingerprint only where the caller may read it and the card enumeration guard lets
 * it. Shared by a get (TokensService) and by lists and searches (TokenSearchService).
 */
@Injectable()
export class TokenReads {
  constructor(
    private readonly tokens: TokensRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly enumeration: CardEnumerationGuard,
    private readonly work: UnitOfWork,
  ) {}

  /**
   * Token objects of a list or search, each as its own deciding rule shows it: the data of those read
   * through a reveal rule is fetched and opened, and only theirs. A search (`token:search`) shows the
   * fingerprint of the tokens the caller may also read, and only theirs; of those, a fingerprint the
   * card enumeration guard has not counted yet is counted now, all the page's in one go, and withheld
   * past its limit (`CardEnumerationGuard.showable`).
   */
  async present(origin: RequestOrigin, permission: string, rows: TokenRow[]): Promise<TokenDto[]> {
    const who = origin.actor;
    const decisions = rows.map((row) => decide(who, permission, row));
    const wanted = rows.filter((_, i) => reveals(decisions[i]));
    const sealed = await this.tokens.findSealedData(
      who.tenantId,
      wanted.map((row) => row.id),
    );
    // A token deleted since the page was read has no data left: it is shown masked, and not audited.
    const opened = wanted.flatMap((row) => {
      const data = sealed.get(row.id);
      return data ? [{ ...row, ...data }] : [];
    });
    const revealed = await this.reveal(who, opened);
    const readable = rows.filter((row, i) =>
      permission === 'token:read' ? decisions[i].allowed : decide(who, 'token:read', row).allowed,
    );
    const shown = await this.enumeration.showable(who, readable);
    await this.recordReveals(origin, opened, revealed);
    return rows.map((row, i) =>
      tokenDto(row, {
        transform: decisions[i].transform,
        revealed: revealedOf(revealed, row.id),
        readable: shown.has(row.id),
      }),
    );
  }

  /** Opens the data of tokens read through a reveal rule, in the shape reads reveal (never a CVC). */
  async reveal(who: Principal, rows: SealedToken[]): Promise<Map<string, unknown>> {
    const revealed = new Map<string, unknown>();
    if (!rows.length) return revealed;
    const keys = await this.tenantKeys.keysWith(
      who.tenantId,
      rows.map((row) => row.data_key),
    );
    for (const row of rows) revealed.set(row.id, revealedData(row.type, openData(keys, row)));
    return revealed;
  }

  /**
   * A read that revealed data: one `reveal` audit row per token (its message names the type, never
   * data), in a change of their own once the answer is ready; and the response kept out of idempotency
   * records (the key is given back, so a retry reads again under the rules as they are then). That
   * change answers no request: it is given the read's actor, not its idempotency claim.
   */
  async recordReveals(
    origin: RequestOrigin,
    rows: SealedToken[],
    revealed: Map<string, unknown>,
  ): Promise<void> {
    const entries = rows
      .filter((row) => revealed.has(row.id))
      .map((row): AuditEntry => ({
        entityType: 'token',
        entityId: row.id,
        operation: 'reveal',
        message: `Token revealed (${row.type})`,
        tokenType: row.type,
      }));
    if (!entries.length) return;
    origin.idempotency?.withhold();
    await this.work.statement({ actor: origin.actor }, async (change) => change.audit(...entries));
  }
}
