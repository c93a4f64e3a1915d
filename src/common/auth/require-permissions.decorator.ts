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

/**
 * Marks a route as needing a valid `BT-API-KEY` holding every listed permission (none listed: any
 * valid key). One decorator feeds the guards and the OpenAPI document (security, 401 and 403).
 */
export function RequirePermissions(...permissions: Permission[]): MethodDecorator & ClassDecorator {
  const needs = permissions.length
    ? `Requires the permission${permissions.length > 1 ? 's' : ''} ${permissions.join(', ')}.`
    : 'Any valid key.';
  return applyDecorators(
    SetMetadata(PERMISSIONS_METADATA, permissions),
    ApiSecurity(API_KEY_SECURITY),
    ApiUnauthorizedResponse({
      description: 'BT-API-KEY is missing, unknown, revoked or expired.',
      content: problemContent(),
    }),
    ApiForbiddenResponse({ description: `The key may not do this. ${needs}`, content: problemContent() }),
  );
}

/** Restricts a route to keys of the given kinds (a session is created with a public key only). */
export const RequireKeyKind = (...kinds: KeyKind[]): MethodDecorator & ClassDecorator =>
  SetMetadata(KEY_KINDS_METADATA, kinds);

/**
 * The route checks its permission per token with the rule evaluator, so a permission held only through
 * access rules gets past the guard here. Everywhere else a permission must be held outright: a rule
 * scoped to some tokens grants nothing on connections, transactions of other tokens, logs or applications.
 */
export const EvaluatedPerToken = (): MethodDecorator & ClassDecorator =>
  SetMetadata(PER_TOKEN_METADATA, true);

/** A route that needs no key at all (health, documentation, the buyer approval page). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_METADATA, true);
