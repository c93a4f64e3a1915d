import { ApiKeyEntity } from '../modules/applications/entities/api-key.entity';
import { ApplicationEntity } from '../modules/applications/entities/application.entity';
import { TenantEntity } from '../modules/tenants/tenant.entity';
import { TokenCvcEntity } from '../modules/tokens/entities/token-cvc.entity';
import { TokenSearchIndexEntity } from '../modules/tokens/entities/token-search-index.entity';
import { TokenEntity } from '../modules/tokens/entities/token.entity';

/** Every entity of the service, listed explicitly so that the app, the CLI and tests load the same set. */
export const ENTITIES = [
  TenantEntity,
  ApplicationEntity,
  ApiKeyEntity,
  TokenEntity,
  TokenSearchIndexEntity,
  TokenCvcEntity,
];
