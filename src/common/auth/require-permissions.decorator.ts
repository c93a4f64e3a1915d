import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { problemContent } from '../errors/problem-details.dto';
import type { KeyKind } from './api-key';
import type { Permission } from './permissions';

export const API_KEY_SECURITY = 'BT-API-KEY';
export const PERMISSIONS_METADATA = 'vault:permissions';
export const KEY_KINDS_METADATA = 'vault:key-kinds';
export const PUBLIC_METADATA = 'vault:public';
export const PER_TOKEN_METADATA = 'vault:per-token';
export const KEY_OPTIONAL_METADATA = 'vault:key-optional';

export interface AuthOptions {
  /**
   * The route checks its token permissions (`token:*`) per token with the rule evaluator, so such a
   * permission held only through access rules gets past the guard here. Every other permission, here and
   * everywhere else, must be held outright: a rule scoped to some tokens grants nothing on connections,
   * transactions of other tokens, routing rules, logs or applications.
   */
  perToken?: boolean;
  /** Only keys of these kinds (a session is created with a public key, authorized with a private one). */
  keyKinds?: KeyKind[];
  /** No key at all (health, documentation, the buyer approval page); no permission may be listed. */
  public?: boolean;
  /**
   * With `public`: the route needs no key, but a `BT-API-KEY` given is authenticated before the handler
   * runs (401 when it is not valid) and the request counts against it (the proxy, which decides itself
   * whether it needs a key).
   */
  keyOptional?: boolean;
}

/**
 * A route's whole authorization in one line: a valid `BT-API-KEY` holding every listed permission (none
 * listed: any valid key), with the options above. One decorator feeds the guards and the OpenAPI
 * document (security, 401 and 403).
 */
export function RequirePermissions(
  permissions: Permission | Permission[] = [],
  options: AuthOptions = {},
): MethodDecorator & ClassDecorator {
  const list = Array.isArray(permissions) ? permissions : [permissions];
  if (options.keyOptional && !options.public) throw new Error('keyOptional is an option of public routes');
  if (options.public) {
    if (list.length || options.keyKinds || options.perToken)
      throw new Error('a public route takes no permission, key kind or per-token check');
    return options.keyOptional
      ? applyDecorators(SetMetadata(PUBLIC_METADATA, true), SetMetadata(KEY_OPTIONAL_METADATA, true))
      : SetMetadata(PUBLIC_METADATA, true);
  }
  const needs = list.length
    ? `Requires the permission${list.length > 1 ? 's' : ''} ${list.join(', ')}.`
    : 'Any valid key.';
  return applyDecorators(
    SetMetadata(PERMISSIONS_METADATA, list),
    ...(options.keyKinds ? [SetMetadata(KEY_KINDS_METADATA, options.keyKinds)] : []),
    ...(options.perToken ? [SetMetadata(PER_TOKEN_METADATA, true)] : []),
    ApiSecurity(API_KEY_SECURITY),
    ApiUnauthorizedResponse({
      description: 'BT-API-KEY is missing, unknown, revoked or expired.',
      content: problemContent(),
    }),
    ApiForbiddenResponse({ description: `The key may not do this. ${needs}`, content: problemContent() }),
  );
}
