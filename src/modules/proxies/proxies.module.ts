import { Module } from '@nestjs/common';
import { OutboundModule } from '../../common/outbound/outbound.module';
import { DatabaseModule } from '../../database/database.module';
import { TokensModule } from '../tokens/tokens.module';
import { ProxyEntity } from './entities/proxy.entity';
import { ProxiesController } from './proxies.controller';
import { ProxiesRepository } from './proxies.repository';
import { ProxiesService } from './proxies.service';
import { ProxyRequestController } from './proxy-request.controller';
import { ProxyRequestService } from './proxy-request.service';

/** Getting data out on purpose: pre-configured proxies and the proxy itself. */
@Module({
  imports: [DatabaseModule.forFeature([ProxyEntity]), TokensModule, OutboundModule],
  controllers: [ProxiesController, ProxyRequestController],
  providers: [ProxiesRepository, ProxiesService, ProxyRequestService],
})
export class ProxiesModule {}
