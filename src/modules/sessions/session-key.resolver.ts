import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AccessRule } from '../../common/auth/access-rule';
import { hashApiKey, sameDigest } from '../../common/auth/api-key';
import { narrowToHolder } from '../../common/auth/grants';
import type { Principal } from '../../common/auth/principal';
import { PrincipalResolver, PrincipalResolvers, Resolution } from '../../common/auth/principal-resolver';
import { Clock } from '../../common/jobs/clock';

interface SessionRow {
  id: string;
  key_hash: Buffer;
  tenant_id: string;
  application_id: string;
  permissions: string[];
  rules: AccessRule[];
  authorized_at: Date | null;
  expires_at: Date;
  /** The authorizing application's grants as they are now (null before authorization). */
  holder_permissions: string[] | null;
  holder_rules: AccessRule[] | null;
}

/**
 * Resolves session keys. The principal is the public application that created the session (audit logs
 * name it as actor) with the session's grants, narrowed at every use to what the authorizing
 * application holds then (contract section 15); an expired session answers `expired` (401). Deleting
 * the authorizing application deletes its sessions (foreign key), so their keys are unknown (401).
 */
@Injectable()
export class SessionKeyResolver implements PrincipalResolver, OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly resolvers: PrincipalResolvers,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.resolvers.register(['session'], this);
  }

  async resolve(key: string): Promise<Resolution> {
    const digest = hashApiKey(key);
    const rows: SessionRow[] = await this.dataSource.query(
      `SELECT s.id, s.key_hash, s.tenant_id, s.application_id, s.permissions, s.rules, s.authorized_at,
              s.expires_at, a.permissions AS holder_permissions, a.rules AS holder_rules
         FROM sessions s LEFT JOIN applications a ON a.id = s.authorized_by AND a.tenant_id = s.tenant_id
        WHERE s.key_hash = $1`,
      [digest],
    );
    const row = rows[0];
    if (!row || !sameDigest(row.key_hash, digest)) return undefined;
    if (row.expires_at.getTime() <= this.clock.now().getTime()) return 'expired';
    const authorized = row.authorized_at !== null;
    if (authorized && row.holder_permissions === null) return undefined;
    const grants = authorized
      ? narrowToHolder(
          { permissions: row.holder_permissions ?? [], rules: row.holder_rules ?? [] },
          row.permissions,
          row.rules,
        )
      : { permissions: row.permissions, rules: row.rules };
    const principal: Principal = {
      tenantId: row.tenant_id,
      applicationId: row.application_id,
      applicationType: 'public',
      keyKind: 'session',
      keyId: row.id,
      sessionId: row.id,
      authorized,
      permissions: grants.permissions,
      rules: grants.rules,
    };
    return principal;
  }
}
