import { SqlParams } from '../../../database/sql';
import type { TransactionPatch } from './transaction-state';
import type { IssuedApproval } from './transaction-types';

/** The SET list of a patch: every column it names, `pending_*` and `previous_status` cleared unless set. */
export function assignments(
  patch: TransactionPatch,
  approval: IssuedApproval | undefined,
  p: SqlParams,
): string[] {
  const set = (column: string, value: unknown) => `${column} = ${p.add(value)}`;
  const out = [
    set('status', patch.status),
    set('pending_operation', patch.pending?.operation ?? null),
    set('pending_since', patch.pending?.since ?? null),
    set('pending_amount', patch.pending?.amount ?? null),
    set('previous_status', patch.previousStatus ?? null),
  ];
  const optional: [string, unknown][] = [
    ['connection_transaction_id', patch.connectionTransactionId],
    ['scheme_transaction_id', patch.schemeTransactionId],
    ['auth_response_code', patch.authResponseCode],
    ['cvv_response_code', patch.cvvResponseCode],
    ['error_code', patch.errorCode],
    [
      'three_d_secure',
      patch.threeDSecure === undefined ? undefined : patch.threeDSecure && JSON.stringify(patch.threeDSecure),
    ],
    ['authorized_amount', patch.authorizedAmount],
    ['authorized_at', patch.authorizedAt],
    ['captured_amount', patch.capturedAmount],
    ['captured_at', patch.capturedAt],
    ['voided_at', patch.voidedAt],
  ];
  for (const [column, value] of optional) if (value !== undefined) out.push(set(column, value));
  if (patch.approval === 'clear') out.push(set('approval_token', null), set('vendor_action', null));
  if (patch.approval === 'issue') {
    if (!approval) throw new Error('a transition that issues an approval needs the approval link');
    out.push(
      set('approval_token_hash', approval.tokenDigest),
      set('approval_token', approval.sealedToken),
      set('approval_expires_at', approval.expiresAt),
      set('vendor_action', approval.sealedVendorAction),
    );
  }
  return out;
}
