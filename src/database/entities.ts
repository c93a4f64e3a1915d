import { ApiKeyEntity } from '../modules/applications/entities/api-key.entity';
import { ApplicationEntity } from '../modules/applications/entities/application.entity';
import { TenantEntity } from '../modules/tenants/tenant.entity';

/** Every entity of the service, listed explicitly so that the app, the CLI and tests load the same set. */
export const ENTITIES = [TenantEntity, ApplicationEntity, ApiKeyEntity];
