import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { WebhookDeliveryDto, WebhookDeliveryPageDto } from './webhook-delivery.dto';
import { CreatedWebhookDto, WebhookDto, WebhookPageDto } from './webhook.dto';

/**
 * The OpenAPI description of the webhooks routes, one decorator per route, so that the controller
 * reads as routing only.
 */

const RULES =
  '`url` must pass the outbound policy (http or https; a public address unless listed in ' +
  'OUTBOUND_ALLOWED_HOSTS); `events` at least one type of GET /webhooks/event-types, no repeats; else 400.';

/** The request and answer of each route, by the controller's method name. */
export const WebhooksApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createWebhook',
        summary: 'Create a webhook',
        description:
          'The response holds the signing secret (`secret`, Standard Webhooks `whsec_...`); it is never ' +
          `shown again. BT-IDEMPOTENCY-KEY is ignored here: a retry creates another webhook. ${RULES}`,
      }),
      ApiCreatedResponse({ type: CreatedWebhookDto }),
    ),
  list: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listWebhooks',
        summary: 'List webhooks',
        description: 'Oldest first; `pagination.next` is the cursor of the next page (pass it as `start`).',
      }),
      ApiOkResponse({ type: WebhookPageDto }),
    ),
  eventTypes: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listWebhookEventTypes',
        summary: 'List the event types a webhook may receive',
      }),
      ApiOkResponse({ type: String, isArray: true }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getWebhook', summary: 'Get a webhook (without its secret)' }),
      ApiOkResponse({ type: WebhookDto }),
    ),
  update: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'updateWebhook',
        summary: 'Replace a webhook',
        description:
          '`name`, `url` and `events` are replaced; `status` and `notify_email` keep their value when ' +
          'omitted (`notify_email: null` clears it). `status: "enabled"` starts the count of consecutive ' +
          `failures afresh. ${RULES}`,
      }),
      ApiOkResponse({ type: WebhookDto }),
    ),
  delete: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook',
        description: 'Its deliveries, pending or past, are deleted with it.',
      }),
    ),
  deliveries: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listWebhookDeliveries',
        summary: "List a webhook's deliveries, newest first",
      }),
      ApiOkResponse({ type: WebhookDeliveryPageDto }),
    ),
  retry: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again',
        description:
          'The delivery becomes pending and due now, whatever its status (its attempts are kept); the ' +
          'answer is the delivery as it stands then.',
      }),
      ApiOkResponse({ type: WebhookDeliveryDto }),
    ),
  ping: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'ping',
        summary: 'Check the service and the key',
        description: 'Answers 200 without a body.',
      }),
      ApiOkResponse({ description: 'The service answers and the key is valid.' }),
    ),
};
