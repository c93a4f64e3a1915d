import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ClsService } from 'nestjs-cls';
import { unauthorized } from '../errors/problem.exception';
import { keyKindOf } from './api-key';
import type { Principal, RequestWithPrincipal } from './principal';
import { PrincipalResolvers } from './principal-resolver';
import { PUBLIC_METADATA } from './require-permissions.decorator';

export const PRINCIPAL_CLS_KEY = 'principal';

/**
 * Resolves `BT-API-KEY` to its principal (401 when missing, malformed, unknown, revoked or expired) and
 * attaches it to the request. The guard below uses it for every route; a route whose authentication
 * depends on the request itself (the proxy: `require_auth` of the proxy its `BT-PROXY-KEY` names) is
 * public to the guards and calls it when it must.
 */
@Injectable()
export class ApiKeyAuthenticator {
  constructor(
    private readonly resolvers: PrincipalResolvers,
    private readonly cls: ClsService,
  ) {}

  async authenticate(req: RequestWithPrincipal): Promise<Principal> {
    const header = req.headers['bt-api-key'];
    if (header === undefined || header === '') throw unauthorized('The BT-API-KEY header is required.');
    const key = Array.isArray(header) ? header[0] : header;
    const kind = keyKindOf(key);
    if (!kind) throw unauthorized('The API key is not valid.');
    const resolution = await this.resolvers.resolve(key, kind);
    if (resolution === 'expired') throw unauthorized('The session key has expired.');
    if (!resolution) throw unauthorized('The API key is not valid.');
    req.principal = resolution;
    if (this.cls.isActive()) this.cls.set(PRINCIPAL_CLS_KEY, resolution);
    return resolution;
  }
}

/** Authenticates `BT-API-KEY` on every route not marked public. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: ApiKeyAuthenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_METADATA, targets)) return true;
    await this.authenticator.authenticate(context.switchToHttp().getRequest<RequestWithPrincipal>());
    return true;
  }
}
