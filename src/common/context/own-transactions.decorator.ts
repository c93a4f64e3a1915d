import { SetMetadata } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import type { ExecutionContext } from '@nestjs/common';

export const OWN_TRANSACTIONS_METADATA = 'vault:own-transactions';

/**
 * The handler manages its own database transactions, because it calls a payment processor and must
 * commit before the call (a crash then leaves a record) and hold no lock during it. The audit and
 * idempotency interceptors then do not wrap the handler in a transaction: the handler writes its own
 * audit rows in its transactions, and the idempotency record is completed after it returns.
 */
export const OwnTransactions = (): MethodDecorator => SetMetadata(OWN_TRANSACTIONS_METADATA, true);

export function ownsTransactions(reflector: Reflector, context: ExecutionContext): boolean {
  return reflector.get<boolean | undefined>(OWN_TRANSACTIONS_METADATA, context.getHandler()) === true;
}
