import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { forbidden } from '../errors/problem.exception';
import type { KeyKind } from './api-key';
import { mayHoldPermission, RequestWithPrincipal } from './principal';
import {
  KEY_KINDS_METADATA,
  PER_TOKEN_METADATA,
  PERMISSIONS_METADATA,
  PUBLIC_METADATA,
} from './require-permissions.decorator';

/**
 * Authorizes the authenticated principal for the route: 403 for an unauthorized session, a key of the
 * wrong kind, or a missing permission. Token permissions held only through rules pass here only on routes
 * marked `@RequirePermissions(p, { perToken: true })`, which check them per token with the rule evaluator;
 * any other permission such a route lists must be held outright.
 */
@Injectable()
export class PermissionsGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_METADATA, targets)) return true;
    const who = context.switchToHttp().getRequest<RequestWithPrincipal>().principal;
    if (!who) throw forbidden('The request is not authenticated.');
    const kinds = this.reflector.getAllAndOverride<KeyKind[] | undefined>(KEY_KINDS_METADATA, targets);
    if (kinds && !kinds.includes(who.keyKind)) {
      throw forbidden(
        `This operation needs a ${kinds.join(' or ')} key; the key given is a ${who.keyKind} key.`,
      );
    }
    if (!who.authorized) throw forbidden('The session has not been authorized.');
    const needed =
      this.reflector.getAllAndOverride<string[] | undefined>(PERMISSIONS_METADATA, targets) ?? [];
    const perToken =
      this.reflector.getAllAndOverride<boolean | undefined>(PER_TOKEN_METADATA, targets) === true;
    const missing = needed.filter((permission) =>
      perToken && permission.startsWith('token:')
        ? !mayHoldPermission(who, permission)
        : !who.permissions.includes(permission),
    );
    if (missing.length) throw forbidden(`The API key lacks the permission ${missing.join(', ')}.`);
    return true;
  }
}
