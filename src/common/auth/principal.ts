import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { AccessRule } from './access-rule';
import type { KeyKind } from './api-key';
import type { ApplicationType } from './permissions';

/** Who is calling: resolved from `BT-API-KEY` by the ApiKeyGuard and available to every handler. */
export interface Principal {
  tenantId: string;
  /** The application the key belongs to; for a session key, the public application that created it. */
  applicationId: string;
  applicationType: ApplicationType;
  keyKind: KeyKind;
  /** The application key id, or the session id for a session key. */
  keyId: string;
  sessionId?: string;
  /** False for a session that a private application has not authorized yet. */
  authorized: boolean;
  /** Flat permissions: held on every container. */
  permissions: string[];
  /** Container- or condition-scoped grants, evaluated per token. */
  rules: AccessRule[];
  /**
   * For an authorized session: what the private application that authorized it holds now. Every
   * permission the session uses on a token is decided by its own grants and by these on that same token
   * (`decide` in token-access.ts): it never does more than this application may do now.
   */
  authorizer?: { permissions: string[]; rules: AccessRule[] };
}

export type RequestWithPrincipal = Request & {
  principal?: Principal;
  /** The client's address (ApiKeyAuthenticator.clientOf: TRUST_PROXY decides whom to believe). */
  clientAddress?: string;
};

/** Handler parameter decorator: `@Principal() who: Principal`. */
export const Principal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<RequestWithPrincipal>().principal;
  if (!principal) throw new Error('Principal requested on a route that is not authenticated');
  return principal;
});

/** True when the principal holds the permission flat or through at least one of its rules. */
export function mayHoldPermission(who: Principal, permission: string): boolean {
  return (
    who.permissions.includes(permission) || who.rules.some((rule) => rule.permissions.includes(permission))
  );
}
