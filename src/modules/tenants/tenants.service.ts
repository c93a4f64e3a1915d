import { TenantsErrorCode, TenantsException } from './tenants.errors';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AuditTrail } from '../../common/audit/audit-trail.service';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { permissionsFor } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import { ApplicationsService } from '../applications/applications.service';
import { CreatedTenantDto, TenantDto } from './dto/tenant.dto';
import { TenantEntity } from './tenant.entity';
import { TenantsRepository } from './tenants.repository';

@Injectable()
export class TenantsService {
  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly tenants: TenantsRepository,
    private readonly applications: ApplicationsService,
    private readonly tenantKeys: TenantKeysService,
    private readonly audit: AuditTrail,
  ) {}

  /** A tenant with a management application holding every management permission, and its first key. */
  async createTenant(name: string): Promise<CreatedTenantDto> {
    return this.db.withTransaction(async () => {
      const id = randomUUID();
      const { keyVersion, wrappedKey } = this.tenantKeys.newTenantKey(id);
      const tenant: TenantEntity = { id, name, keyVersion, wrappedKey, createdAt: new Date() };
      await this.tenants.insert(tenant);
      const app = await this.applications.createApplication({
        tenantId: tenant.id,
        name: `${name} management`,
        type: 'management',
        permissions: permissionsFor('management'),
        rules: [],
        createdBy: null,
        createKey: true,
      });
      await this.audit.write({ tenantId: tenant.id, applicationId: app.id }, [
        { entityType: 'tenant', entityId: tenant.id, operation: 'create', message: 'Tenant created' },
        {
          entityType: 'application',
          entityId: app.id,
          operation: 'create',
          message: 'Management application created with the tenant',
        },
      ]);
      return { tenant_id: tenant.id, management_application_id: app.id, management_key: app.key! };
    });
  }

  async getSelf(who: Principal): Promise<TenantDto> {
    const tenant = await this.tenants.findById(who.tenantId);
    if (!tenant) throw new TenantsException(TenantsErrorCode.NotFound, 'Tenant not found');
    return { id: tenant.id, name: tenant.name, created_at: tenant.createdAt.toISOString() };
  }
}
