import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
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
import { WebhooksApi } from './dto/webhooks.openapi';

const WebhookId = () => Param('id', new ParseIdPipe('Webhook'));
const DeliveryId = () => Param('deliveryId', new ParseIdPipe('Webhook delivery'));

@ApiTags('Webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @RequirePermissions('webhook:create')
  // The answer holds the signing secret: no idempotency record may keep it for a replay.
  @NeverReplayed()
  @WebhooksApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: CreateWebhookDto): Promise<CreatedWebhookDto> {
    return this.webhooks.create(origin, body);
  }

  @Get()
  @RequirePermissions('webhook:read')
  @Audited('webhook', 'read', { message: 'Webhooks listed' })
  @WebhooksApi.list()
  list(@Principal() who: Principal, @Query() query: ListWebhooksQueryDto): Promise<WebhookPageDto> {
    return this.webhooks.list(who, query);
  }

  // Before `:id`, which would take `event-types` for an id.
  @Get('event-types')
  @RequirePermissions('webhook:read')
  @WebhooksApi.eventTypes()
  eventTypes(): string[] {
    return this.webhooks.eventTypes();
  }

  @Get(':id')
  @RequirePermissions('webhook:read')
  @Audited('webhook', 'read')
  @WebhooksApi.get()
  get(@Principal() who: Principal, @WebhookId() id: string): Promise<WebhookDto> {
    return this.webhooks.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('webhook:update')
  @WebhooksApi.update()
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
  @WebhooksApi.delete()
  delete(@Origin() origin: RequestOrigin, @WebhookId() id: string): Promise<void> {
    return this.webhooks.delete(origin, id);
  }

  @Get(':id/deliveries')
  @RequirePermissions('webhook:read')
  @Audited('webhook', 'read', { message: 'Webhook deliveries listed' })
  @WebhooksApi.deliveries()
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
  @WebhooksApi.retry()
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
  @WebhooksApi.ping()
  ping(): void {}
}
