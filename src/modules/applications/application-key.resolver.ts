import { Injectable, OnModuleInit } from '@nestjs/common';
import { hashApiKey, KeyKind, sameDigest } from '../../common/auth/api-key';
import type { ApplicationType } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import { PrincipalResolver, PrincipalResolvers, Resolution } from '../../common/auth/principal-resolver';
import { ApplicationsRepository } from './applications.repository';

const TYPE_OF_KIND: Partial<Record<KeyKind, ApplicationType>> = {
  public: 'public',
  private: 'private',
  management: 'management',
};

/** Resolves public, private and management keys: one indexed lookup by the key's SHA-256 digest. */
@Injectable()
export class ApplicationKeyResolver implements PrincipalResolver, OnModuleInit {
  constructor(
    private readonly applications: ApplicationsRepository,
    private readonly resolvers: PrincipalResolvers,
  ) {}

  onModuleInit(): void {
    this.resolvers.register(['public', 'private', 'management'], this);
  }

  async resolve(key: string, kind: KeyKind): Promise<Resolution> {
    const digest = hashApiKey(key);
    const row = await this.applications.findKeyHolder(digest);
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
