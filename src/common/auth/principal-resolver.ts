import { Injectable } from '@nestjs/common';
import type { KeyKind } from './api-key';
import type { Principal } from './principal';

/** What a resolver says of a key: the principal, `expired`, or nothing (unknown or revoked key). */
export type Resolution = Principal | 'expired' | undefined;

export interface PrincipalResolver {
  resolve(key: string, kind: KeyKind): Promise<Resolution>;
}

/**
 * Modules that own a kind of key (applications, sessions) register a resolver for it here, so that
 * the guard needs no knowledge of where keys are stored.
 */
@Injectable()
export class PrincipalResolvers {
  private readonly byKind = new Map<KeyKind, PrincipalResolver>();

  register(kinds: KeyKind[], resolver: PrincipalResolver): void {
    for (const kind of kinds) this.byKind.set(kind, resolver);
  }

  resolve(key: string, kind: KeyKind): Promise<Resolution> {
    return this.byKind.get(kind)?.resolve(key, kind) ?? Promise.resolve(undefined);
  }
}
