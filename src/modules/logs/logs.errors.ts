import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the audit log refuses a query; the values are the problems' `code` on the wire. */
export enum LogsErrorCode {
  /** Two ways of paging at once. */
  BadRequest = 'bad_request',
}

const KIND: Record<LogsErrorCode, DomainErrorKind> = { [LogsErrorCode.BadRequest]: 'invalid' };

export class LogsException extends DomainException<LogsErrorCode> {
  readonly kind = KIND[this.code];
}
