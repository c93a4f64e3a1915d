import { Body, Controller, Header, HttpCode, Post } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { NeverReplayed } from '../../../common/context/never-replayed.decorator';
import { AdyenNotificationsService } from './adyen-notifications.service';

/**
 * Where Adyen sends its standard notifications (webhooks) for adyen-card connections: no API key (Adyen
 * has none of ours); every item is verified with the HMAC key of the connection it concerns. Adyen
 * expects `[accepted]` for a batch it need not send again. Not part of the API document: only Adyen
 * calls it.
 */
@ApiExcludeController()
@Controller('orchestration/vendors/adyen/notifications')
@RequirePermissions([], { public: true })
export class AdyenNotificationsController {
  constructor(private readonly notifications: AdyenNotificationsService) {}

  @Post()
  @HttpCode(200)
  @NeverReplayed()
  @Header('Content-Type', 'text/plain; charset=utf-8')
  async receive(@Body() body: unknown): Promise<string> {
    await this.notifications.receive(body);
    return '[accepted]';
  }
}
