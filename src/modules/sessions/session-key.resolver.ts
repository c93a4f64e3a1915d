import { Injectable, OnModuleInit } from '@nestjs/common';
import { hashApiKey, sameDigest } from '../../common/auth/api-key';
import { narrowToHolder } from '../../common/auth/grants';
import type { Principal } from '../../common/auth/principal';
import { PrincipalResolver, PrincipalResolvers, Resolution } from '../../common/auth/principal-resolver';
import { Clock } from '../../common/jobs/clock';
import { SessionsRepository } from './sessions.repository';

/**
 * Resolves session keys. The principal is the public application that created the session (audit logs
 * name it as actor) with the session's grants, narrowed at every use to what the authorizing
 * application holds then; those holdings come along as `authorizer`, against
 * which every reveal is checked per token. An expired session answers `expired` (401).
 * Deleting the authorizing application deletes its sessions (foreign key), so their keys are unknown
 * (401).
 */
@Injectable()
export class SessionKeyResolver implements PrincipalResolver, OnModuleInit {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly resolvers: PrincipalResolvers,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.resolvers.register(['session'], this);
  }

  async resolve(key: string): Promise<Resolution> {
    const digest = hashApiKey(key);
    const row = await this.sessions.findByKeyHash(digest);
    if (!row || !sameDigest(row.keyHash, digest)) return undefined;
    if (row.expiresAt.getTime() <= this.clock.now().getTime()) return 'expired';
    const authorized = row.authorizedAt !== null;
    if (authorized && row.holderPermissions === null) return undefined;
    const holder = { permissions: row.holderPermissions ?? [], rules: row.holderRules ?? [] };
    const grants = authorized
      ? narrowToHolder(holder, row.permissions, row.rules)
      : { permissions: row.permissions, rules: row.rules };
    const principal: Principal = {
      tenantId: row.tenantId,
      applicationId: row.applicationId,
      applicationType: 'public',
      keyKind: 'session',
      keyId: row.id,
      sessionId: row.id,
      authorized,
      permissions: grants.permissions,
      rules: grants.rules,
      ...(authorized ? { authorizer: holder } : {}),
    };
    return principal;
  }
}
