import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the tenants module refuses a request; the values are the problems' `code` on the wire. */
export enum TenantsErrorCode {
  NotFound = 'not_found',
}

const KIND: Record<TenantsErrorCode, DomainErrorKind> = { [TenantsErrorCode.NotFound]: 'not_found' };

export class TenantsException extends DomainException<TenantsErrorCode> {
  readonly kind = KIND[this.code];
}
