import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { EntityTypeDto, ListLogsQueryDto, LogPageDto } from './dto/log.dto';
import { LogsService } from './logs.service';

@ApiTags('Logs')
@Controller('logs')
export class LogsController {
  constructor(private readonly logs: LogsService) {}

  @Get()
  @RequirePermissions('log:read')
  @ApiOperation({
    operationId: 'listLogs',
    summary: 'List audit logs, newest first',
    description:
      'Cursor pagination: pass `pagination.after` of a page as `start` to get the next one. `page` pages by ' +
      'number instead.',
  })
  @ApiOkResponse({ type: LogPageDto })
  list(@Principal() who: Principal, @Query() query: ListLogsQueryDto): Promise<LogPageDto> {
    return this.logs.list(who, query);
  }

  @Get('entity-types')
  @RequirePermissions('log:read')
  @ApiOperation({ operationId: 'listLogEntityTypes', summary: 'List the entity types logs are written for' })
  @ApiOkResponse({ type: [EntityTypeDto] })
  entityTypes(): EntityTypeDto[] {
    return this.logs.entityTypes();
  }
}
