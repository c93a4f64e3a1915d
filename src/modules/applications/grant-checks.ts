import type { AccessRule } from '../../common/auth/access-rule';
import { isPermissionAllowedFor } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import { ApplicationsErrorCode, ApplicationsException } from './applications.errors';

/** What administers a tenant: an application holding both may create applications and keys. */
export const ADMINISTRATION = ['application:create', 'application:update'];

/** The management permissions among an application's permissions and rules. */
export function managementPermissions(permissions: string[] = [], rules: AccessRule[] = []): string[] {
  const all = [...permissions, ...rules.flatMap((rule) => rule.permissions)];
  return [...new Set(all.filter((permission) => isPermissionAllowedFor(permission, 'management')))];
}

export const administers = (app: { permissions: string[] }): boolean =>
  ADMINISTRATION.every((permission) => app.permissions.includes(permission));

/**
 * Nobody grants what they do not hold: 403 unless the caller holds every
 * management permission in `needed` outright.
 */
export function assertHolds(who: Principal, needed: string[], doing: string): void {
  const missing = needed.filter((permission) => !who.permissions.includes(permission));
  if (missing.length)
    throw new ApplicationsException(
      ApplicationsErrorCode.Forbidden,
      `${doing} needs the caller to hold ${missing.join(', ')} itself.`,
    );
}
