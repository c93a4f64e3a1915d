import type { AuditActor } from './audit.types';

/**
 * The tenant whose log records the operator's key operations (docs/keys.md): ceremonies, shares entered
 * at unseal (their index, never their value), rotations and changes of provider, the HSM not answering.
 * It has no application and no API key, so no request reads it; `vault logs --system` prints it. Its row
 * is made by the first change that records in it, and it counts for nothing else (not a first tenant).
 */
export const SYSTEM_TENANT_ID = '00000000-0000-4000-8000-000000000000';

/** The actor of the system tenant's rows: the service itself (`actor_type` `system`). */
export const SYSTEM_ACTOR: AuditActor = { tenantId: SYSTEM_TENANT_ID, applicationId: null, system: true };
