import { Module } from '@nestjs/common';
import { OutboundHttp } from './outbound-http.service';

/**
 * The outbound HTTP port (the outbound policy): import it where requests leave for a
 * destination a tenant chose. Takes AppConfig from the global ConfigModule.
 */
@Module({ providers: [OutboundHttp], exports: [OutboundHttp] })
export class OutboundModule {}
