import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { Metrics, METRICS_CONTENT_TYPE } from '../../common/metrics/metrics';

/**
 * `GET /metrics`, for a Prometheus scraper: unauthenticated, and only there at all with
 * METRICS_ENABLED=true (otherwise a 404 like any unknown path). Not part of the API document.
 */
@ApiExcludeController()
@RequirePermissions([], { public: true })
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: Metrics) {}

  @Get()
  @Header('Content-Type', METRICS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  scrape(): Promise<string> {
    return this.metrics.scrape();
  }
}
