import { SetMetadata } from '@nestjs/common';
import type { ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';

export const CLAIMED_AFTER_BODY_METADATA = 'vault:claimed-after-body';

/**
 * The handler reads the request's body itself, as a stream (an import's upload): the idempotency
 * interceptor cannot digest it before the handler runs, so the handler claims `BT-IDEMPOTENCY-KEY` once it
 * has the body's digest (`IdempotencyClaim.claimBody`). The same key with another body is then refused
 * as on every other route, rather than answered the first body's response.
 */
export const ClaimedAfterBody = (): MethodDecorator => SetMetadata(CLAIMED_AFTER_BODY_METADATA, true);

export function isClaimedAfterBody(reflector: Reflector, context: ExecutionContext): boolean {
  return reflector.get<boolean | undefined>(CLAIMED_AFTER_BODY_METADATA, context.getHandler()) === true;
}
