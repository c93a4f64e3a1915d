import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import type { ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';

export const NEVER_REPLAYED_METADATA = 'vault:never-replayed';

/**
 * The handler answers with a credential, and the key it is called with may be shared (a public key
 * sits in every browser of a shop): the idempotency interceptor ignores `BT-IDEMPOTENCY-KEY` here,
 * so that every call makes its own, and no holder is ever sent another's.
 */
export const NeverReplayed = (): MethodDecorator =>
  applyDecorators(SetMetadata(NEVER_REPLAYED_METADATA, true), ApiExtension(NEVER_REPLAYED_EXTENSION, true));

/** Marks the operation in the OpenAPI document, so that it is not documented as taking the header. */
export const NEVER_REPLAYED_EXTENSION = 'x-never-replayed';

export function isNeverReplayed(reflector: Reflector, context: ExecutionContext): boolean {
  return reflector.get<boolean | undefined>(NEVER_REPLAYED_METADATA, context.getHandler()) === true;
}
