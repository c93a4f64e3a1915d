import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why orchestration refuses a request; the values are the problems' `code` on the wire. */
export enum OrchestrationErrorCode {
  /** No such transaction or connection for the tenant (another tenant's is never told apart). */
  NotFound = 'not_found',
  /** The transaction's status does not allow the operation (or nothing is left to refund). */
  Conflict = 'conflict',
  VoidNotSupported = 'void_not_supported',
  RefundsNotSupported = 'refunds_not_supported',
  /** No `connection_id`, and no routing rule matched, or none of its connections can take the payment. */
  NoConnectionAvailable = 'no_connection_available',
}

const KIND: Record<OrchestrationErrorCode, DomainErrorKind> = {
  [OrchestrationErrorCode.NotFound]: 'not_found',
  [OrchestrationErrorCode.Conflict]: 'conflict',
  [OrchestrationErrorCode.VoidNotSupported]: 'invalid',
  [OrchestrationErrorCode.RefundsNotSupported]: 'invalid',
  [OrchestrationErrorCode.NoConnectionAvailable]: 'invalid',
};

export class OrchestrationException extends DomainException<OrchestrationErrorCode> {
  readonly kind = KIND[this.code];

  static transactionNotFound(): OrchestrationException {
    return new OrchestrationException(OrchestrationErrorCode.NotFound, 'Transaction not found');
  }

  static ruleNotFound(): OrchestrationException {
    return new OrchestrationException(OrchestrationErrorCode.NotFound, 'Rule not found');
  }

  static buyerNotFound(): OrchestrationException {
    return new OrchestrationException(OrchestrationErrorCode.NotFound, 'Buyer not found');
  }

  static paymentMethodNotFound(): OrchestrationException {
    return new OrchestrationException(
      OrchestrationErrorCode.NotFound,
      'No such payment method stored for the buyer',
    );
  }

  /** 409: the write conflicts with what is stored (`detail` says what, never echoing a value). */
  static conflict(detail: string): OrchestrationException {
    return new OrchestrationException(OrchestrationErrorCode.Conflict, detail);
  }

  static connectionNotFound(): OrchestrationException {
    return new OrchestrationException(OrchestrationErrorCode.NotFound, 'Connection not found');
  }
}
