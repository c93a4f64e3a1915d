import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { AuditChainService, ChainReport } from '../../common/audit/audit-chain.service';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import type { CreatedTenantDto } from '../tenants/dto/tenant.dto';
import { TenantsService } from '../tenants/tenants.service';

/** What the command line can ask for; the same requests travel over the server's control socket. */
export type AdminRequest =
  | { op: 'tenant.create'; name: string }
  | { op: 'keys.rotate' }
  | { op: 'logs.verify'; tenant?: string; seal: boolean };

export interface RotatedKeys {
  active_version: string;
  rewrapped_tenants: number;
}

export type AdminResult = CreatedTenantDto | RotatedKeys | ChainReport;

/** The operator's operations, run in a request context of their own, in the CLI or in the server. */
@Injectable()
export class AdminOperations {
  constructor(
    private readonly tenants: TenantsService,
    private readonly tenantKeys: TenantKeysService,
    private readonly chain: AuditChainService,
    private readonly cls: ClsService,
  ) {}

  run(request: AdminRequest): Promise<AdminResult> {
    return this.cls.run(async (): Promise<AdminResult> => {
      switch (request.op) {
        case 'tenant.create':
          return this.tenants.createTenant(request.name);
        case 'keys.rotate': {
          const result = await this.tenantKeys.rotate();
          return { active_version: result.active, rewrapped_tenants: result.rewrapped };
        }
        case 'logs.verify':
          // Rows committed since the last tick are sealed first, so that the report covers them too.
          if (request.seal) await this.chain.seal();
          return this.chain.verify(request.tenant);
      }
    });
  }
}
