import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Principal, RequestWithPrincipal } from '../auth/principal';
import type { IdempotencyClaim, Origin as ChangeOrigin } from './change';

/** Who makes a change, and the request it answers (see `change.ts`). */
export type Origin = ChangeOrigin;

/** The origin of a change an authenticated request makes: its actor is the request's principal. */
export interface RequestOrigin extends ChangeOrigin {
  readonly actor: Principal;
  /** The client's address, as the authenticator found it (TRUST_PROXY); absent outside a request. */
  readonly client?: string;
}

/** A request as the guards and the idempotency interceptor leave it. */
export type RequestWithOrigin = RequestWithPrincipal & { idempotency?: IdempotencyClaim };

/**
 * Handler parameter decorator for a route that writes: `@Origin() origin: RequestOrigin`, the principal (the
 * actor of the change's audit rows) and the request's idempotency claim, which the service hands to the
 * change it opens (`UnitOfWork`).
 */
export const Origin = createParamDecorator((_: unknown, ctx: ExecutionContext): RequestOrigin => {
  const req = ctx.switchToHttp().getRequest<RequestWithOrigin>();
  if (!req.principal) throw new Error('Origin requested on a route that is not authenticated');
  const client = req.clientAddress === undefined ? {} : { client: req.clientAddress };
  return req.idempotency
    ? { actor: req.principal, idempotency: req.idempotency, ...client }
    : { actor: req.principal, ...client };
});
