import { Injectable, OnModuleInit } from '@nestjs/common';
import { hashApiKey, KeyKind, sameDigest } from '../../common/auth/api-key';
import type { ApplicationType } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import { PrincipalResolver, PrincipalResolvers, Resolution } from '../../common/auth/principal-resolver';
import { ChangeNotifications } from '../../database/change-notifications';
import { ApplicationsRepository, KeyHolder } from './applications.repository';

const TYPE_OF_KIND: Partial<Record<KeyKind, ApplicationType>> = {
  public: 'public',
  private: 'private',
  management: 'management',
};

/** How many keys an instance keeps in memory, and for how long at most (a bound if a notice were lost). */
const CACHE_SIZE = 10_000;
const CACHE_TTL_MS = 30_000;

/**
 * Resolves public, private and management keys: one indexed lookup by the key's SHA-256 digest, kept
 * in memory while the instance listens for key changes (ChangeNotifications): any change of a key or
 * an application, on any instance, empties every instance's cache when it commits, and nothing is
 * served from memory while the listening connection is down (nor with the embedded database). Only keys
 * that exist are kept: an unknown key always asks the database.
 */
@Injectable()
export class ApplicationKeyResolver implements PrincipalResolver, OnModuleInit {
  private readonly cache = new Map<string, { holder: KeyHolder; until: number }>();
  /** Counts announced changes: a lookup that overlapped one is not kept (it may have read the old row). */
  generation = 0;

  constructor(
    private readonly applications: ApplicationsRepository,
    private readonly resolvers: PrincipalResolvers,
    private readonly changes: ChangeNotifications,
  ) {}

  onModuleInit(): void {
    this.resolvers.register(['public', 'private', 'management'], this);
    // Routing rules are cached elsewhere (FlowRulesService); every other change may concern keys.
    this.changes.onChange((table) => {
      if (table !== 'flow_rules') this.invalidate();
    });
  }

  /** Forgets every cached key (a change committed here, or announced by the database). */
  invalidate(): void {
    this.generation++;
    this.cache.clear();
  }

  private async holderOf(digest: Buffer): Promise<KeyHolder | undefined> {
    if (!this.changes.listening) return this.applications.findKeyHolder(digest);
    const id = digest.toString('base64');
    const now = Date.now();
    const cached = this.cache.get(id);
    if (cached && cached.until > now) return cached.holder;
    const generation = this.generation;
    const holder = await this.applications.findKeyHolder(digest);
    if (holder && this.changes.listening && generation === this.generation) {
      if (this.cache.size >= CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(id, { holder, until: now + CACHE_TTL_MS });
    }
    return holder;
  }

  async resolve(key: string, kind: KeyKind): Promise<Resolution> {
    const digest = hashApiKey(key);
    const row = await this.holderOf(digest);
    if (!row || !sameDigest(row.keyHash, digest) || TYPE_OF_KIND[kind] !== row.type) return undefined;
    const principal: Principal = {
      tenantId: row.tenantId,
      applicationId: row.applicationId,
      applicationType: row.type,
      keyKind: kind,
      keyId: row.keyId,
      authorized: true,
      permissions: row.permissions,
      rules: row.rules ?? [],
    };
    return principal;
  }
}
