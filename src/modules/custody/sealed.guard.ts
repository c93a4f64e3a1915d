import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { MasterKeyRing, SealedError } from '../../common/crypto/master-keys';

/**
 * KEY_PROVIDER=split only: while the ring is sealed, every route answers 503 `sealed` before anything
 * else runs (no key asked for, no database touched), but liveness and the custodians' `/sys/*` routes.
 */
@Injectable()
export class SealedGuard implements CanActivate {
  constructor(private readonly ring: MasterKeyRing) {}

  canActivate(context: ExecutionContext): boolean {
    if (!this.ring.sealed) return true;
    const path = context.switchToHttp().getRequest<Request>().path;
    if (path === '/health/live' || path.startsWith('/sys/')) return true;
    throw new SealedError();
  }
}
