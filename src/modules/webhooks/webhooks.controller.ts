import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { NeverReplayed } from '../../common/context/never-replayed.decorator';
import { OffsetPaginationQueryDto } from '../../common/pagination/offset-pagination.dto';
import { ParseIdPipe } from '../../common/pipes/parse-id.pipe';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { WebhookDeliveryDto, WebhookDeliveryPageDto } from './dto/webhook-delivery.dto';
import {
  CreatedWebhookDto,
  CreateWebhookDto,
  ListWebhooksQueryDto,
  UpdateWebhookDto,
  WebhookDto,
  WebhookPageDto,
} from './dto/webhook.dto';
import { WebhooksService } from './webhooks.service';

const WebhookId = () => Param('id', new ParseIdPipe('Webhook'));
const DeliveryId = () => Param('deliveryId', new ParseIdPipe('Webhook delivery'));

const RULES =
  '`url` must pass the outbound policy (http or https; a public address unless listed in ' +
  'OUTBOUND_ALLOWED_HOSTS); `events` at least one type of GET /webhooks/event-types, no repeats; else 400.';

@ApiTags('Webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @RequirePermissions('webhook:create')
  // The answer holds the signing secret: no idempotency record may keep it for a replay.
  @NeverReplayed()
  @ApiOperation({
    operationId: 'createWebhook',
    summary: 'Create a webhook',
    description:
      'The response holds the signing secret (`secret`, Standard Webhooks `whsec_...`); it is never ' +
      `shown again. BT-IDEMPOTENCY-KEY is ignored here: a retry creates another webhook. ${RULES}`,
  })
  @ApiCreatedResponse({ type: CreatedWebhookDto })
  create(@Origin() origin: RequestOrigin, @Body() body: CreateWebhookDto): Promise<CreatedWebhookDto> {
    return this.webhooks.create(origin, body);
  }

  @Get()
  @RequirePermissions('webhook:read')
  @Audited('webhook', 'read', { message: 'Webhooks listed' })
  @ApiOperation({
    operationId: 'listWebhooks',
    summary: 'List webhooks',
    description: 'Oldest first; `pagination.next` is the cursor of the next page (pass it as `start`).',
  })
  @ApiOkResponse({ type: WebhookPageDto })
  list(@Principal() who: Principal, @Query() query: ListWebhooksQueryDto): Promise<WebhookPageDto> {
    return this.webhooks.list(who, query);
  }

  // Before `:id`, which would take `event-types` for an id.
  @Get('event-types')
  @RequirePermissions('webhook:read')
  @ApiOperation({
    operationId: 'listWebhookEventTypes',
    summary: 'List the event types a webhook may receive',
  })
  @ApiOkResponse({ type: String, isArray: true })
  eventTypes(): string[] {
    return this.webhooks.eventTypes();
  }

  @Get(':id')
  @RequirePermissions('webhook:read')
  @Audited('webhook', 'read')
  @ApiOperation({ operationId: 'getWebhook', summary: 'Get a webhook (without its secret)' })
  @ApiOkResponse({ type: WebhookDto })
  get(@Principal() who: Principal, @WebhookId() id: string): Promise<WebhookDto> {
    return this.webhooks.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('webhook:update')
  @ApiOperation({
    operationId: 'updateWebhook',
    summary: 'Replace a webhook',
    description:
      '`name`, `url` and `events` are replaced; `status` and `notify_email` keep their value when ' +
      'omitted (`notify_email: null` clears it). `status: "enabled"` starts the count of consecutive ' +
      `failures afresh. ${RULES}`,
  })
  @ApiOkResponse({ type: WebhookDto })
  update(
    @Origin() origin: RequestOrigin,
    @WebhookId() id: string,
    @Body() body: UpdateWebhookDto,
  ): Promise<WebhookDto> {
    return this.webhooks.update(origin, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('webhook:delete')
  @ApiOperation({
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook',
    description: 'Its deliveries, pending or past, are deleted with it.',
  })
  delete(@Origin() origin: RequestOrigin, @WebhookId() id: string): Promise<void> {
    return this.webhooks.delete(origin, id);
  }

  @Get(':id/deliveries')
  @RequirePermissions('webhook:read')
  @Audited('webhook', 'read', { message: 'Webhook deliveries listed' })
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: "List a webhook's deliveries, newest first",
  })
  @ApiOkResponse({ type: WebhookDeliveryPageDto })
  deliveries(
    @Principal() who: Principal,
    @WebhookId() id: string,
    @Query() query: OffsetPaginationQueryDto,
  ): Promise<WebhookDeliveryPageDto> {
    return this.webhooks.deliveries(who, id, query);
  }

  @Post(':id/deliveries/:deliveryId/retry')
  @HttpCode(200)
  @RequirePermissions('webhook:update')
  @ApiOperation({
    operationId: 'retryWebhookDelivery',
    summary: 'Send a delivery again',
    description:
      'The delivery becomes pending and due now, whatever its status (its attempts are kept); the ' +
      'answer is the delivery as it stands then.',
  })
  @ApiOkResponse({ type: WebhookDeliveryDto })
  retry(
    @Origin() origin: RequestOrigin,
    @WebhookId() id: string,
    @DeliveryId() deliveryId: string,
  ): Promise<WebhookDeliveryDto> {
    return this.webhooks.retry(origin, id, deliveryId);
  }
}

/** `GET /ping`: lets a client check that the service answers and its key is valid (Basis Theory's SDK). */
@ApiTags('Webhooks')
@Controller('ping')
export class PingController {
  @Get()
  @RequirePermissions()
  @ApiOperation({
    operationId: 'ping',
    summary: 'Check the service and the key',
    description: 'Answers 200 without a body.',
  })
  @ApiOkResponse({ description: 'The service answers and the key is valid.' })
  ping(): void {}
}
