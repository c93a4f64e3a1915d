import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AccessRule } from '../../common/auth/access-rule';
import { hashApiKey, KeyKind, sameDigest } from '../../common/auth/api-key';
import type { ApplicationType } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import { PrincipalResolver, PrincipalResolvers, Resolution } from '../../common/auth/principal-resolver';

interface KeyRow {
  key_id: string;
  key_hash: Buffer;
  application_id: string;
  tenant_id: string;
  type: ApplicationType;
  permissions: string[];
  rules: AccessRule[] | null;
}

const TYPE_OF_KIND: Partial<Record<KeyKind, ApplicationType>> = {
  public: 'public',
  private: 'private',
  management: 'management',
};

/** Resolves public, private and management keys: one indexed lookup by the key's SHA-256 digest. */
@Injectable()
export class ApplicationKeyResolver implements PrincipalResolver, OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly resolvers: PrincipalResolvers,
  ) {}

  onModuleInit(): void {
    this.resolvers.register(['public', 'private', 'management'], this);
  }

  async resolve(key: string, kind: KeyKind): Promise<Resolution> {
    const digest = hashApiKey(key);
    const rows: KeyRow[] = await this.dataSource.query(
      `SELECT k.id AS key_id, k.key_hash, a.id AS application_id, a.tenant_id, a.type, a.permissions, a.rules
         FROM api_keys k JOIN applications a ON a.id = k.application_id
        WHERE k.key_hash = $1`,
      [digest],
    );
    const row = rows[0];
    if (!row || !sameDigest(row.key_hash, digest) || TYPE_OF_KIND[kind] !== row.type) return undefined;
    const principal: Principal = {
      tenantId: row.tenant_id,
      applicationId: row.application_id,
      applicationType: row.type,
      keyKind: kind,
      keyId: row.key_id,
      authorized: true,
      permissions: row.permissions,
      rules: row.rules ?? [],
    };
    return principal;
  }
}
