import type { KeySummary } from './applications.repository';
import type { ApiKeyDto, ApplicationDto } from './dto/application.dto';
import type { ApplicationEntity } from './entities/application.entity';

/**
 * How the API answers an application and its keys (GET, the writes, and the `application:*` events):
 * a key's clear value only in the answer that creates it.
 */
export function keyDto(key: KeySummary, clear?: string): ApiKeyDto {
  return {
    id: key.id,
    ...(clear ? { key: clear } : {}),
    created_by: key.createdBy,
    created_at: key.createdAt.toISOString(),
  };
}

export function applicationDto(app: ApplicationEntity, keys: ApiKeyDto[], clearKey?: string): ApplicationDto {
  return {
    id: app.id,
    tenant_id: app.tenantId,
    name: app.name,
    type: app.type,
    permissions: app.permissions,
    rules: app.rules ?? [],
    ...(app.type === 'public' ? { allowed_origins: app.allowedOrigins ?? [] } : {}),
    ...(clearKey ? { key: clearKey } : {}),
    keys,
    created_by: app.createdBy,
    created_at: app.createdAt.toISOString(),
    modified_by: app.modifiedBy,
    modified_at: app.modifiedAt?.toISOString() ?? null,
  };
}
