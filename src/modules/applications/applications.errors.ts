import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why applications and their keys refuse a request; the values are the problems' `code` on the wire. */
export enum ApplicationsErrorCode {
  /** No such application or key for the tenant (another tenant's is never told apart). */
  NotFound = 'not_found',
  /** The caller would grant or manage more than it holds itself. */
  Forbidden = 'forbidden',
  /** The change would leave the tenant without an administrator. */
  Conflict = 'conflict',
}

const KIND: Record<ApplicationsErrorCode, DomainErrorKind> = {
  [ApplicationsErrorCode.NotFound]: 'not_found',
  [ApplicationsErrorCode.Forbidden]: 'forbidden',
  [ApplicationsErrorCode.Conflict]: 'conflict',
};

export class ApplicationsException extends DomainException<ApplicationsErrorCode> {
  readonly kind = KIND[this.code];

  static notFound(what: 'Application' | 'Application key'): ApplicationsException {
    return new ApplicationsException(ApplicationsErrorCode.NotFound, `${what} not found`);
  }
}
