import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckResult,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { ShutdownState } from '../../common/lifecycle/shutdown-state';

@ApiTags('Health')
@RequirePermissions([], { public: true })
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly shutdown: ShutdownState,
  ) {}

  @Get('live')
  @HealthCheck()
  @ApiOperation({ operationId: 'getLiveness', summary: 'Liveness: the process is up' })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /** 503 from the moment the process begins to stop (a balancer then sends it nothing new), without asking the database. */
  @Get('ready')
  @HealthCheck()
  @ApiOperation({ operationId: 'getReadiness', summary: 'Readiness: the database answers' })
  @ApiServiceUnavailableResponse({ description: 'The database does not answer, or the server is stopping.' })
  ready(): Promise<HealthCheckResult> {
    if (!this.shutdown.ready)
      return this.health.check([() => this.indicators.check('server').down({ message: 'stopping' })]);
    return this.health.check([() => this.database.pingCheck('database', { timeout: 3000 })]);
  }
}
