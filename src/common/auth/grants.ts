import { addFieldError, type FieldErrors } from '../errors/problem.exception';
import type { AccessRule } from './access-rule';
import { ApplicationType, isKnownPermission, isPermissionAllowedFor } from './permissions';

const add = addFieldError;

function checkPermission(errors: FieldErrors, path: string, permission: string, type: ApplicationType): void {
  if (!isKnownPermission(permission)) add(errors, path, `unknown permission ${permission}`);
  else if (!isPermissionAllowedFor(permission, type)) {
    add(errors, path, `permission ${permission} is not allowed for ${type} applications`);
  }
}

/**
 * Checks permissions and rules against what an application type may hold (contract sections 2 and 5).
 * `conditions` are allowed only where the caller says so (session rules).
 */
export function checkGrants(
  type: ApplicationType,
  permissions: string[] = [],
  rules: AccessRule[] = [],
  options: { allowConditions: boolean; prefix?: string } = { allowConditions: false },
): FieldErrors {
  const errors: FieldErrors = {};
  const prefix = options.prefix ?? '';
  permissions.forEach((permission, i) =>
    checkPermission(errors, `${prefix}permissions[${i}]`, permission, type),
  );
  const priorities = new Map<number, number>();
  rules.forEach((rule, i) => {
    const path = `${prefix}rules[${i}]`;
    rule.permissions.forEach((permission, j) =>
      checkPermission(errors, `${path}.permissions[${j}]`, permission, type),
    );
    const hasConditions = rule.conditions !== undefined;
    if (hasConditions && !options.allowConditions)
      add(errors, `${path}.conditions`, 'conditions are only allowed on session rules');
    if (rule.container === undefined && !hasConditions)
      add(errors, path, 'a rule needs a container or conditions');
    if (rule.container !== undefined && hasConditions)
      add(errors, path, 'a rule has a container or conditions, not both');
    const first = priorities.get(rule.priority);
    if (first !== undefined)
      add(errors, `${path}.priority`, `priority ${rule.priority} is already used by rules[${first}]`);
    else priorities.set(rule.priority, i);
  });
  return errors;
}
