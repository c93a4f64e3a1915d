import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
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

  @Get('checkpoint')
  @RequirePermissions('log:read')
  @ApiOperation({
    operationId: 'getLogCheckpoint',
    summary: "The latest signed checkpoint of the tenant's audit log",
    description:
      'The audit log is a Merkle tree (RFC 9162) whose leaves are the logs as `GET /logs` shows them ' +
      '(RFC 8785 canonical JSON). Keep the `note`: a later consistency proof shows the log still holds ' +
      'what it signed. 404 `no_checkpoint` before the first.',
  })
  @ApiOkResponse({ type: CheckpointDto })
  checkpoint(@Principal() who: Principal): Promise<CheckpointDto> {
    return this.logs.checkpoint(who);
  }

  @Get('checkpoint/keys')
  @RequirePermissions('log:read')
  @ApiOperation({
    operationId: 'listLogCheckpointKeys',
    summary: 'The keys that sign checkpoints, old ones too',
  })
  @ApiOkResponse({ type: [SigningKeyDto] })
  keys(): Promise<SigningKeyDto[]> {
    return this.logs.signingKeys();
  }

  @Get('consistency')
  @RequirePermissions('log:read')
  @ApiOperation({
    operationId: 'getLogConsistencyProof',
    summary: 'That an earlier checkpointed tree is a prefix of a later one (RFC 9162 consistency proof)',
  })
  @ApiOkResponse({ type: ConsistencyProofDto })
  consistency(
    @Principal() who: Principal,
    @Query() query: ConsistencyQueryDto,
  ): Promise<ConsistencyProofDto> {
    return this.logs.consistency(who, query);
  }

  @Get(':id/proof')
  @RequirePermissions('log:read')
  @ApiOperation({
    operationId: 'getLogProof',
    summary: 'That a log is in a checkpointed tree (RFC 9162 inclusion proof)',
    description:
      '409 `not_yet_checkpointed` (with `Retry-After`) for a log not in a checkpoint yet; it is within two ' +
      'checkpoint periods of being written.',
  })
  @ApiOkResponse({ type: LogProofDto })
  proof(
    @Principal() who: Principal,
    @Param('id') id: string,
    @Query() query: ProofQueryDto,
  ): Promise<LogProofDto> {
    return this.logs.proof(who, id, query);
  }
}
