import { addFieldError, type FieldErrors } from '../errors/problem.exception';
import { type AccessRule, CONTAINER_PATTERN } from './access-rule';
import { ApplicationType, isKnownPermission, isPermissionAllowedFor } from './permissions';

const add = addFieldError;

function checkPermission(errors: FieldErrors, path: string, permission: string, type: ApplicationType): void {
  if (!isKnownPermission(permission)) add(errors, path, `unknown permission ${permission}`);
  else if (!isPermissionAllowedFor(permission, type)) {
    add(errors, path, `permission ${permission} is not allowed for ${type} applications`);
  }
}

/**
 * Checks permissions and rules against what an application type may hold.
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
    if (rule.transform === 'reveal' && type !== 'private')
      add(errors, `${path}.transform`, `reveal is not allowed for ${type} applications`);
    const first = priorities.get(rule.priority);
    if (first !== undefined)
      add(errors, `${path}.priority`, `priority ${rule.priority} is already used by rules[${first}]`);
    else priorities.set(rule.priority, i);
  });
  return errors;
}

/** What an application holds: flat permissions and container rules. */
export interface Holdings {
  permissions: string[];
  rules: AccessRule[];
}

/** The container a rule is confined to: its container, or a `container` condition naming a container path. */
function confinement(rule: AccessRule): string | undefined {
  if (rule.container !== undefined) return rule.container;
  const scoped = (rule.conditions ?? []).find(
    (c) => c.attribute === 'container' && CONTAINER_PATTERN.test(c.value),
  );
  return scoped?.value;
}

/**
 * True when `holder` may `permission` on every token in `container` and below it. Rules are walked by
 * ascending priority as the evaluator would: a rule overlapping the container that refuses the
 * permission means some token below it is refused; the first rule covering the whole container decides.
 */
function holdsOnContainer(holder: Holdings, permission: string, container: string): boolean {
  if (holder.permissions.includes(permission)) return true;
  const ordered = [...holder.rules].sort((a, b) => a.priority - b.priority);
  for (const rule of ordered) {
    const own = rule.container;
    if (own === undefined) continue;
    const covers = container.startsWith(own);
    const below = own.startsWith(container);
    if (!covers && !below) continue;
    if (!rule.permissions.includes(permission)) return false;
    if (covers) return true;
  }
  return false;
}

/**
 * True when `holder` reads every token in `container` and below it in clear with `permission`: the
 * same walk as `holdsOnContainer`, but every rule overlapping the container must grant the permission
 * with `reveal`, down to the first one covering it whole. Strict where in doubt:
 * - flat permissions decide before any rule and never reveal, so holding `permission` flat is a no;
 * - a rule without a container (never on an application today) might match any token: a no;
 * - `container` undefined (a session rule confined by conditions other than a container path) stands
 *   for every container (`/`): only a reveal rule covering all of them (a rule on `/`, reached before any
 *   rule that refuses) would do.
 * Tokens in several containers can still be decided for the holder by a rule on another container;
 * `decide` (token-access.ts) settles those at every use by asking the holder's own rules again.
 */
function revealsOnContainer(holder: Holdings, permission: string, container = '/'): boolean {
  if (holder.permissions.includes(permission)) return false;
  const ordered = [...holder.rules].sort((a, b) => a.priority - b.priority);
  for (const rule of ordered) {
    const own = rule.container;
    if (own === undefined) return false;
    const covers = container.startsWith(own);
    const below = own.startsWith(container);
    if (!covers && !below) continue;
    if (!rule.permissions.includes(permission) || rule.transform !== 'reveal') return false;
    if (covers) return true;
  }
  return false;
}

/**
 * Privilege escalation check for a session: every permission granted,
 * flat or through a rule, must be held by the authorizing application at least as widely. Flat grants
 * need the permission flat; a rule confined to a container needs it on that whole container. A rule
 * with `reveal` needs the application to read that whole container in clear with each of the rule's
 * permissions (`revealsOnContainer`), else `rules[i].transform` is refused.
 */
export function escalations(
  holder: Holdings,
  permissions: string[] = [],
  rules: AccessRule[] = [],
): FieldErrors {
  const errors: FieldErrors = {};
  const notHeld = (permission: string, where: string): string =>
    `permission ${permission} is not held by the authorizing application${where}`;
  permissions.forEach((permission, i) => {
    if (!holder.permissions.includes(permission))
      add(errors, `permissions[${i}]`, notHeld(permission, ' on every container'));
  });
  rules.forEach((rule, i) => {
    const container = confinement(rule);
    rule.permissions.forEach((permission, j) => {
      // A rule confined to no container may match any token: it needs the permission on all of `/`.
      const held = holdsOnContainer(holder, permission, container ?? '/');
      if (!held)
        add(
          errors,
          `rules[${i}].permissions[${j}]`,
          notHeld(permission, container === undefined ? ' on every container' : ` on ${container}`),
        );
    });
    if (rule.transform !== 'reveal') return;
    const unrevealed = rule.permissions.filter(
      (permission) => !revealsOnContainer(holder, permission, container),
    );
    if (unrevealed.length)
      add(
        errors,
        `rules[${i}].transform`,
        `reveal needs the authorizing application to hold a reveal rule with ${unrevealed.join(', ')} ` +
          `deciding ${container === undefined ? 'every container' : `all of ${container}`}`,
      );
  });
  return errors;
}

/**
 * What a session may do now: its grants, each kept only as far as the application that authorized it
 * still holds it, by the same measure as `escalations`. A rule keeps its place (and so still decides the
 * tokens it matches) even when nothing of it is left. This is the coarse, per-container cut the guard
 * sees; whether the session may act on a given token is then decided by `decide` (token-access.ts),
 * which also asks the authorizer's own rules on that token (a token in several containers may be
 * withheld from the authorizer by a rule on another of them).
 */
export function narrowToHolder(holder: Holdings, permissions: string[], rules: AccessRule[]): Holdings {
  return {
    permissions: permissions.filter((permission) => holder.permissions.includes(permission)),
    rules: rules.map((rule) => {
      const container = confinement(rule);
      return {
        ...rule,
        permissions: rule.permissions.filter((permission) =>
          holdsOnContainer(holder, permission, container ?? '/'),
        ),
      };
    }),
  };
}
