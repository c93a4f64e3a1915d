import { Controller, Headers, HttpCode, Post, Req } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request } from 'express';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { NeverReplayed } from '../../../common/context/never-replayed.decorator';
import { CheckoutNotificationsService } from './checkout-notifications.service';

/**
 * Where Checkout.com sends its webhooks for checkout-card connections: no API key (Checkout.com has none
 * of ours); each event is verified with the `Cko-Signature` header under the `webhook_secret` of the
 * connection it concerns. The body arrives as bytes (app.setup.ts), since the signature covers them
 * exactly. Not part of the API document: only Checkout.com calls it.
 */
@ApiExcludeController()
@Controller('orchestration/notifications/checkout')
@RequirePermissions([], { public: true })
export class CheckoutNotificationsController {
  constructor(private readonly notifications: CheckoutNotificationsService) {}

  @Post()
  @HttpCode(200)
  @NeverReplayed()
  async receive(@Req() req: Request, @Headers('cko-signature') signature: unknown): Promise<void> {
    await this.notifications.receive(req.body, signature);
  }
}
