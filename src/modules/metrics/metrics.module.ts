import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';

/** The metrics endpoint; the application imports it only with METRICS_ENABLED=true. */
@Module({ controllers: [MetricsController] })
export class MetricsEndpointModule {}
