import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiExcludeEndpoint,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { Audited } from '../../../common/audit/audited.decorator';
import { Principal } from '../../../common/auth/principal';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { ConnectionDto, ConnectionRequestDto } from './connection.dto';
import { ConnectionsService } from './connections.service';

const ConnectionId = () => Param('id', new ParseIdPipe('Connection'));

@ApiTags('Orchestration')
@Controller('orchestration/connections')
export class ConnectionsController {
  constructor(private readonly connections: ConnectionsService) {}

  @Post()
  @RequirePermissions('orchestration:connections:create')
  @ApiOperation({
    operationId: 'createConnection',
    summary: 'Create a connection from a formula',
    description:
      'The connection starts `pending`; a verification with the vendor makes it `available` or `failed`, normally ' +
      'within a second. Secret field values are stored encrypted and shown as `********`.',
  })
  @ApiCreatedResponse({ type: ConnectionDto })
  create(@Origin() origin: RequestOrigin, @Body() body: ConnectionRequestDto): Promise<ConnectionDto> {
    return this.connections.create(origin, body);
  }

  @Get()
  @RequirePermissions('orchestration:connections:update')
  @Audited('connection', 'read')
  @ApiOperation({ operationId: 'listConnections', summary: 'List connections (a plain array)' })
  @ApiOkResponse({ type: [ConnectionDto] })
  list(@Principal() who: Principal): Promise<ConnectionDto[]> {
    return this.connections.list(who);
  }

  /** The interface document labels listing connections PUT: it answers the list, as GET does. */
  @Put()
  @RequirePermissions('orchestration:connections:update')
  @Audited('connection', 'read')
  @ApiExcludeEndpoint()
  listByPut(@Principal() who: Principal): Promise<ConnectionDto[]> {
    return this.connections.list(who);
  }

  @Get(':id')
  @RequirePermissions('orchestration:connections:update')
  @Audited('connection', 'read')
  @ApiOperation({ operationId: 'getConnection', summary: 'Get a connection' })
  @ApiOkResponse({ type: ConnectionDto })
  get(@Principal() who: Principal, @ConnectionId() id: string): Promise<ConnectionDto> {
    return this.connections.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('orchestration:connections:update')
  @ApiOperation({
    operationId: 'updateConnection',
    summary: 'Update a connection',
    description: 'The connection is verified again. A secret sent as `********` keeps its stored value.',
  })
  @ApiOkResponse({ type: ConnectionDto })
  update(
    @Origin() origin: RequestOrigin,
    @ConnectionId() id: string,
    @Body() body: ConnectionRequestDto,
  ): Promise<ConnectionDto> {
    return this.connections.update(origin, id, body);
  }

  /** Basis Theory's own samples update a connection with POST; it is accepted as PUT. */
  @Post(':id')
  @HttpCode(200)
  @RequirePermissions('orchestration:connections:update')
  @ApiExcludeEndpoint()
  updateByPost(
    @Origin() origin: RequestOrigin,
    @ConnectionId() id: string,
    @Body() body: ConnectionRequestDto,
  ): Promise<ConnectionDto> {
    return this.connections.update(origin, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('orchestration:connections:delete')
  @ApiOperation({
    operationId: 'deleteConnection',
    summary: 'Delete a connection',
    description: 'A connection with transactions is kept for them but no longer listed or usable.',
  })
  delete(@Origin() origin: RequestOrigin, @ConnectionId() id: string): Promise<void> {
    return this.connections.delete(origin, id);
  }
}
