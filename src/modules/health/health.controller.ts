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
import { AppConfig } from '../../config/app-config';
import { ChangeNotifications } from '../../database/change-notifications';

@ApiTags('Health')
@RequirePermissions([], { public: true })
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly shutdown: ShutdownState,
    private readonly notifications: ChangeNotifications,
    private readonly config: AppConfig,
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
    return this.health.check([
      () => this.database.pingCheck('database', { timeout: 3000 }),
      // Whether the change notifications' connection is up (after a failover: LISTENing on the new
      // leader). Not a condition of readiness: without it, keys and rules are read from the database.
      ...(this.config.DATABASE_URL
        ? [() => this.indicators.check('notifications').up({ listening: this.notifications.listening })]
        : []),
    ]);
  }
}
