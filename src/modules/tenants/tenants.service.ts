import { TenantsErrorCode, TenantsException } from './tenants.errors';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { permissionsFor } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import type { Change, Origin } from '../../common/unit-of-work/change';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { ApplicationsService } from '../applications/applications.service';
import { CreatedTenantDto, TenantDto } from './dto/tenant.dto';
import { TenantEntity } from './tenant.entity';
import { TenantsRepository } from './tenants.repository';

/** The ids of a tenant about to be created and of its management application. */
interface NewTenantIds {
  tenantId: string;
  applicationId: string;
}

@Injectable()
export class TenantsService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly tenants: TenantsRepository,
    private readonly applications: ApplicationsService,
    private readonly tenantKeys: TenantKeysService,
  ) {}

  /**
   * A tenant with a management application holding every management permission, and its first key
   * (the command line). One change, whose audit rows name the new management application as actor.
   */
  async createTenant(name: string): Promise<CreatedTenantDto> {
    const ids = newTenantIds();
    return this.work.transaction(creatorOf(ids), (change) => this.create(change, ids, name));
  }

  /**
   * First start: the tenant `name`, only on a database without any tenant; undefined otherwise. Instances
   * starting together take the bootstrap lock in the change, so that one of them creates it.
   */
  async createFirstTenant(name: string): Promise<CreatedTenantDto | undefined> {
    const ids = newTenantIds();
    return this.work.transaction(creatorOf(ids), async (change) => {
      await this.tenants.lockBootstrap(change);
      if ((await this.tenants.count(change)) > 0) return undefined;
      return this.create(change, ids, name);
    });
  }

  async getSelf(who: Principal): Promise<TenantDto> {
    const tenant = await this.tenants.findById(who.tenantId);
    if (!tenant) throw new TenantsException(TenantsErrorCode.NotFound, 'Tenant not found');
    return { id: tenant.id, name: tenant.name, created_at: tenant.createdAt.toISOString() };
  }

  private async create(change: Change, ids: NewTenantIds, name: string): Promise<CreatedTenantDto> {
    const id = ids.tenantId;
    const { keyVersion, wrappedKey } = this.tenantKeys.newTenantKey(id);
    const tenant: TenantEntity = { id, name, keyVersion, wrappedKey, createdAt: new Date() };
    await this.tenants.insert(change, tenant);
    const app = await this.applications.createApplication(change, {
      id: ids.applicationId,
      tenantId: tenant.id,
      name: `${name} management`,
      type: 'management',
      permissions: permissionsFor('management'),
      rules: [],
      createdBy: null,
      createKey: true,
    });
    change.audit(
      { entityType: 'tenant', entityId: tenant.id, operation: 'create', message: 'Tenant created' },
      {
        entityType: 'application',
        entityId: app.id,
        operation: 'create',
        message: 'Management application created with the tenant',
      },
    );
    return { tenant_id: tenant.id, management_application_id: app.id, management_key: app.key! };
  }
}

function newTenantIds(): NewTenantIds {
  return { tenantId: randomUUID(), applicationId: randomUUID() };
}

/** A new tenant's rows are attributed to its management application, which the change creates. */
function creatorOf(ids: NewTenantIds): Origin {
  return { actor: { tenantId: ids.tenantId, applicationId: ids.applicationId } };
}
