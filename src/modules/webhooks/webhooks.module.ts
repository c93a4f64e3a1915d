import { Module } from '@nestjs/common';
import { OutboundModule } from '../../common/outbound/outbound.module';
import { DeliveriesRepository } from './delivery/deliveries.repository';
import { WebhookDeliveryWorker } from './delivery/webhook-delivery.worker';
import { WebhookRetention } from './delivery/webhook-retention';
import { WebhookOutboxModule } from './webhook-outbox';
import { PingController, WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/**
 * Webhooks: their management API, and the workers that deliver what the outbox
 * (WebhookOutboxModule, given to every module through EventsModule) records.
 */
@Module({
  imports: [WebhookOutboxModule, OutboundModule],
  controllers: [WebhooksController, PingController],
  providers: [
    WebhooksRepository,
    WebhooksService,
    DeliveriesRepository,
    WebhookDeliveryWorker,
    WebhookRetention,
  ],
})
export class WebhooksModule {}
