import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import {
  CheckpointDto,
  ConsistencyProofDto,
  ConsistencyQueryDto,
  LogProofDto,
  ProofQueryDto,
  SigningKeyDto,
} from './dto/log-proof.dto';
import { EntityTypeDto, ListLogsQueryDto, LogPageDto } from './dto/log.dto';
import { LogsService } from './logs.service';
import { LogsApi } from './dto/logs.openapi';

@ApiTags('Logs')
@Controller('logs')
export class LogsController {
  constructor(private readonly logs: LogsService) {}

  @Get()
  @RequirePermissions('log:read')
  @LogsApi.list()
  list(@Principal() who: Principal, @Query() query: ListLogsQueryDto): Promise<LogPageDto> {
    return this.logs.list(who, query);
  }

  @Get('entity-types')
  @RequirePermissions('log:read')
  @LogsApi.entityTypes()
  entityTypes(): EntityTypeDto[] {
    return this.logs.entityTypes();
  }

  @Get('checkpoint')
  @RequirePermissions('log:read')
  @LogsApi.checkpoint()
  checkpoint(@Principal() who: Principal): Promise<CheckpointDto> {
    return this.logs.checkpoint(who);
  }

  @Get('checkpoint/keys')
  @RequirePermissions('log:read')
  @LogsApi.keys()
  keys(): Promise<SigningKeyDto[]> {
    return this.logs.signingKeys();
  }

  @Get('consistency')
  @RequirePermissions('log:read')
  @LogsApi.consistency()
  consistency(
    @Principal() who: Principal,
    @Query() query: ConsistencyQueryDto,
  ): Promise<ConsistencyProofDto> {
    return this.logs.consistency(who, query);
  }

  @Get(':id/proof')
  @RequirePermissions('log:read')
  @LogsApi.proof()
  proof(
    @Principal() who: Principal,
    @Param('id') id: string,
    @Query() query: ProofQueryDto,
  ): Promise<LogProofDto> {
    return this.logs.proof(who, id, query);
  }
}
