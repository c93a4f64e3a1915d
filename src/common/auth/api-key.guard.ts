import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ClsService } from 'nestjs-cls';
import { unauthorized } from '../errors/problem.exception';
import { keyKindOf } from './api-key';
import type { RequestWithPrincipal } from './principal';
import { PrincipalResolvers } from './principal-resolver';
import { PUBLIC_METADATA } from './require-permissions.decorator';

export const PRINCIPAL_CLS_KEY = 'principal';

/** Authenticates `BT-API-KEY`: 401 when missing, malformed, unknown, revoked or expired. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly resolvers: PrincipalResolvers,
    private readonly cls: ClsService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_METADATA, targets)) return true;
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();
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
    return true;
  }
}
