import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the audit log refuses a query; the values are the problems' `code` on the wire. */
export enum LogsErrorCode {
  /** Two ways of paging at once. */
  BadRequest = 'bad_request',
  /** No such log row for the caller's tenant. */
  NotFound = 'not_found',
  /** The tenant's log has not been checkpointed yet. */
  NoCheckpoint = 'no_checkpoint',
  /** The row is not in a checkpoint yet (it will be within two checkpoint periods). */
  NotYetCheckpointed = 'not_yet_checkpointed',
}

const KIND: Record<LogsErrorCode, DomainErrorKind> = {
  [LogsErrorCode.BadRequest]: 'invalid',
  [LogsErrorCode.NotFound]: 'not_found',
  [LogsErrorCode.NoCheckpoint]: 'not_found',
  [LogsErrorCode.NotYetCheckpointed]: 'conflict',
};

export class LogsException extends DomainException<LogsErrorCode> {
  readonly kind = KIND[this.code];
}
