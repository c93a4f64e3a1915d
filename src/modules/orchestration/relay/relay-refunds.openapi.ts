import { ApiCreatedResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { ApiDocs } from '../../../common/api-docs.decorator';
import { RelayRefundDto, RelayRefundPageDto } from './relay-refund.dto';

/** The OpenAPI description of the relay refund routes, one decorator per route. */
export const RelayRefundsApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createRelayRefund',
        summary: 'Refund a payment made at the vendor before the migration',
        description:
          "The connection's vendor refunds its payment `vendor_payment_id` (a Stripe PaymentIntent or charge, an " +
          'Adyen pspReference, a Checkout.com payment, a Braintree transaction). 201 whatever the outcome: ' +
          '`succeeded`, `failed` (with `error_code`), or `processing` until the vendor confirms it (Adyen and ' +
          'Checkout.com confirm later; an unanswered call is settled by the settlement job). Once per ' +
          '`BT-IDEMPOTENCY-KEY`: a retry answers the same refund and calls the vendor no more.',
      }),
      ApiCreatedResponse({ type: RelayRefundDto }),
    ),
  list: () =>
    ApiDocs(
      ApiOperation({ operationId: 'listRelayRefunds', summary: 'List relay refunds, newest first' }),
      ApiOkResponse({ type: RelayRefundPageDto }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getRelayRefund', summary: 'Get a relay refund' }),
      ApiOkResponse({ type: RelayRefundDto }),
    ),
};
