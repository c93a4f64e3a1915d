import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AppConfig } from '../../config/app-config';
import { ProblemException, unauthorized } from '../errors/problem.exception';
import { Clock } from '../jobs/clock';
import { keyKindOf } from './api-key';
import { AuthFailureCounter } from './auth-failures';
import type { Principal, RequestWithPrincipal } from './principal';
import { TrustedProxies } from '../../config/trusted-proxies';
import { PrincipalResolvers } from './principal-resolver';
import { KEY_OPTIONAL_METADATA, PUBLIC_METADATA } from './require-permissions.decorator';

/**
 * Resolves `BT-API-KEY` to its principal (401 when missing, malformed, unknown, revoked or expired) and
 * attaches it to the request. The guard below uses it for every route; a route whose authentication
 * depends on the request itself (the proxy: `require_auth` of the proxy its `BT-PROXY-KEY` names) is
 * public to the guards and calls it when it must. A request is authenticated once, whoever asks first
 * (this guard, the rate limit's, the proxy). Failed authentications are counted per client address (the
 * peer, or the client a trusted proxy forwards for: TRUST_PROXY): past AUTH_FAILURES_PER_MINUTE the
 * address's further failures are 429s. The key is looked up first: a valid key is never refused for
 * what other requests from its address did.
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly failures: AuthFailureCounter;
  private readonly proxies: TrustedProxies;

  constructor(
    private readonly resolvers: PrincipalResolvers,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.failures = new AuthFailureCounter(config.AUTH_FAILURES_PER_MINUTE);
    this.proxies = TrustedProxies.fromSetting(config.TRUST_PROXY);
  }

  async authenticate(req: RequestWithPrincipal): Promise<Principal> {
    if (req.principal) return req.principal;
    this.clientOf(req);
    const header = req.headers['bt-api-key'];
    if (header === undefined || header === '') throw unauthorized('The BT-API-KEY header is required.');
    const key = Array.isArray(header) ? header[0] : header;
    const kind = keyKindOf(key);
    const resolution = kind ? await this.resolvers.resolve(key, kind) : undefined;
    if (resolution === undefined || resolution === 'expired') {
      this.recordFailure(req);
      throw unauthorized(
        resolution === 'expired' ? 'The session key has expired.' : 'The API key is not valid.',
      );
    }
    req.principal = resolution;
    return resolution;
  }

  /**
   * The request's client address (kept on the request): its peer, or, when the peer is a trusted proxy,
   * the rightmost address of `X-Forwarded-For` that is not one (TrustedProxies.clientOf).
   */
  clientOf(req: RequestWithPrincipal): string {
    req.clientAddress ??= this.proxies.clientOf(req.socket?.remoteAddress, req.headers['x-forwarded-for']);
    return req.clientAddress;
  }

  /**
   * Counts a failed authentication of the client address (an unknown key of any kind); 429 instead when
   * the address has used up its failed authentications this minute.
   */
  recordFailure(req: RequestWithPrincipal): void {
    const address = this.clientOf(req);
    const now = this.clock.now().getTime();
    const blockedFor = this.failures.blockedFor(address, now);
    if (blockedFor !== undefined)
      throw new ProblemException(
        429,
        `Too many failed authentications from this address; retry in ${blockedFor} seconds.`,
        { code: 'rate_limited', headers: { 'Retry-After': String(blockedFor) } },
      );
    this.failures.record(address, now);
  }
}

/**
 * Authenticates `BT-API-KEY` on every route not marked public, and on public routes marked `keyOptional`
 * when the request carries one.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: ApiKeyAuthenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();
    if (isPublicRoute(this.reflector, context) && !(keyIsOptional(this.reflector, context) && hasApiKey(req)))
      return true;
    await this.authenticator.authenticate(req);
    return true;
  }
}

/** Whether the request carries a `BT-API-KEY` header at all (valid or not). */
export function hasApiKey(req: RequestWithPrincipal): boolean {
  const header = req.headers['bt-api-key'];
  return header !== undefined && header !== '';
}

export function isPublicRoute(reflector: Reflector, context: ExecutionContext): boolean {
  return (
    reflector.getAllAndOverride<boolean>(PUBLIC_METADATA, [context.getHandler(), context.getClass()]) === true
  );
}

export function keyIsOptional(reflector: Reflector, context: ExecutionContext): boolean {
  return (
    reflector.getAllAndOverride<boolean>(KEY_OPTIONAL_METADATA, [
      context.getHandler(),
      context.getClass(),
    ]) === true
  );
}
