import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics';

/** The process's metrics, for every module to count through (served by the metrics endpoint module). */
@Global()
@Module({ providers: [Metrics], exports: [Metrics] })
export class MetricsModule {}
