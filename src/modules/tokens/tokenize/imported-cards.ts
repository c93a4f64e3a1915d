import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hmacBase62, type TenantKeys } from '../../../common/crypto/tenant-keys.service';
import type { FieldErrors } from '../../../common/errors/problem.exception';
import type { Change } from '../../../common/unit-of-work/change';
import { pendingGroups } from '../enumeration/card-enumeration';
import { sealData } from '../data/seal-data';
import { TYPE_DEFAULTS, validateData } from '../data/validate-data';
import { TokensRepository, type SealedToken } from '../tokens.repository';

/** A card of an import, checked already (docs/migration.md); `holder_name` is sealed with the number. */
export interface CardToImport {
  number: string;
  expiration_month: number;
  expiration_year: number;
  holder_name?: string;
  metadata: Record<string, string> | null;
}

/** What became of one card: the token made, or the one of the tenant that already held its number. */
export interface ImportedCard {
  tokenId: string;
  fingerprint: string;
  duplicate: boolean;
}

const CARD = TYPE_DEFAULTS.card;

/**
 * Card tokens made by an import, a batch at a time, in the import's change: the same rows a tokenize of
 * `{type: 'card', data}` writes (default containers and fingerprint expression, data sealed under the
 * tenant's data key), deduplicated by fingerprint within the tenant (an existing live card token, or an
 * earlier card of the same batch, answers instead). The import never answers fingerprints, so the card
 * enumeration guard does not count it: each token keeps its groups pending, counted at its first read
 * that would show the fingerprint (docs/tokens.md). No audit row or event per token: the import's job
 * records its own (docs/migration.md).
 */
/** A batch of cards made into token rows (sealed, fingerprinted), not yet written: `ImportedCards.prepare`. */
export interface PreparedCards {
  tenantId: string;
  rows: SealedToken[];
}

@Injectable()
export class ImportedCards {
  constructor(private readonly tokens: TokensRepository) {}

  /**
   * The token rows of a batch of cards, one per card in order: checked, sealed and fingerprinted, with no
   * database work, so that an import prepares its next batch while the last one is being written.
   */
  prepare(
    keys: TenantKeys,
    tenantId: string,
    createdBy: string | null,
    cards: CardToImport[],
    now: Date,
  ): PreparedCards {
    const rows = cards.map((card): SealedToken => {
      const errors: FieldErrors = {};
      const { number, expiration_month, expiration_year } = card;
      const validated = validateData(
        'card',
        { number, expiration_month, expiration_year },
        'data',
        now,
        errors,
      );
      if (!validated) throw new Error('an imported card must be checked before it is prepared');
      const row = { tenant_id: tenantId, id: randomUUID() };
      const data = card.holder_name
        ? { ...(validated.data as object), holder_name: card.holder_name }
        : validated.data;
      return {
        ...row,
        type: 'card',
        data: sealData(keys, row, data),
        data_key: keys.data.generation,
        mask: validated.mask ?? null,
        card_brand: validated.brand ?? null,
        card_bin: validated.bin ?? null,
        // The default card fingerprint expression, `{{ data.number }}`, renders the number itself.
        fingerprint: hmacBase62(keys.fingerprint, number),
        fingerprint_groups: pendingGroups(keys.fingerprint, [number]),
        fingerprint_expression: CARD.fingerprintExpression,
        metadata: card.metadata,
        search_indexes: null,
        containers: CARD.containers,
        expires_at: null,
        created_by: createdBy,
        created_at: now,
        modified_by: null,
        modified_at: null,
      };
    });
    return { tenantId, rows };
  }

  /**
   * Writes a prepared batch in the import's change: a card whose number the tenant already holds in a
   * live card token (or that an earlier card of the batch has) answers that token, a duplicate; the
   * others are inserted. Answers what became of each card, in order.
   */
  async store(change: Change, { tenantId, rows }: PreparedCards, now: Date): Promise<ImportedCard[]> {
    if (!rows.length) return [];
    const existing = new Map<string, string>();
    const found = await this.tokens.findLiveCards(
      change,
      tenantId,
      rows.map((row) => row.fingerprint),
      now,
    );
    // The oldest of a number's tokens answers, as deduplication at tokenize does.
    found.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1));
    for (const row of found) if (!existing.has(row.fingerprint)) existing.set(row.fingerprint, row.id);
    const fresh: SealedToken[] = [];
    const answers = rows.map((row): ImportedCard => {
      const known = existing.get(row.fingerprint);
      if (known) return { tokenId: known, fingerprint: row.fingerprint, duplicate: true };
      existing.set(row.fingerprint, row.id);
      fresh.push(row);
      return { tokenId: row.id, fingerprint: row.fingerprint, duplicate: false };
    });
    await this.tokens.insert(
      change,
      { tokens: fresh, digests: [], cvcs: [] },
      { named: (id) => new Error(`token ${id} exists already`) },
    );
    return answers;
  }
}
