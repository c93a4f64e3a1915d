import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AccessRule } from '../../common/auth/access-rule';
import { hashApiKey, sameDigest } from '../../common/auth/api-key';
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
}

/**
 * Resolves session keys. The principal is the public application that created the session (audit logs
 * name it as actor) with exactly the session's grants; an expired session answers `expired` (401).
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
      `SELECT id, key_hash, tenant_id, application_id, permissions, rules, authorized_at, expires_at
         FROM sessions WHERE key_hash = $1`,
      [digest],
    );
    const row = rows[0];
    if (!row || !sameDigest(row.key_hash, digest)) return undefined;
    if (row.expires_at.getTime() <= this.clock.now().getTime()) return 'expired';
    const principal: Principal = {
      tenantId: row.tenant_id,
      applicationId: row.application_id,
      applicationType: 'public',
      keyKind: 'session',
      keyId: row.id,
      sessionId: row.id,
      authorized: row.authorized_at !== null,
      permissions: row.permissions,
      rules: row.rules,
    };
    return principal;
  }
}
