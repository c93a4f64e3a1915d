import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the webhooks API refuses a request; the values are the problems' `code` on the wire. */
export enum WebhooksErrorCode {
  /** No such webhook for the tenant. */
  NotFound = 'not_found',
  /** No such delivery of the webhook. */
  DeliveryNotFound = 'delivery_not_found',
}

const KIND: Record<WebhooksErrorCode, DomainErrorKind> = {
  [WebhooksErrorCode.NotFound]: 'not_found',
  [WebhooksErrorCode.DeliveryNotFound]: 'not_found',
};

export class WebhooksException extends DomainException<WebhooksErrorCode> {
  readonly kind = KIND[this.code];

  static notFound(): WebhooksException {
    return new WebhooksException(WebhooksErrorCode.NotFound, 'Webhook not found');
  }

  static deliveryNotFound(): WebhooksException {
    return new WebhooksException(WebhooksErrorCode.DeliveryNotFound, 'Webhook delivery not found');
  }
}
