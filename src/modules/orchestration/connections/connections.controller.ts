import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiTags } from '@nestjs/swagger';
import { Audited } from '../../../common/audit/audited.decorator';
import { Principal } from '../../../common/auth/principal';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { ConnectionDto, ConnectionRequestDto } from './connection.dto';
import { ConnectionsService } from './connections.service';
import { ConnectionsApi } from './connections.openapi';

const ConnectionId = () => Param('id', new ParseIdPipe('Connection'));

@ApiTags('Orchestration')
@Controller('orchestration/connections')
export class ConnectionsController {
  constructor(private readonly connections: ConnectionsService) {}

  @Post()
  @RequirePermissions('orchestration:connections:create')
  @ConnectionsApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: ConnectionRequestDto): Promise<ConnectionDto> {
    return this.connections.create(origin, body);
  }

  @Get()
  @RequirePermissions('orchestration:connections:update')
  @Audited('connection', 'read')
  @ConnectionsApi.list()
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
  @ConnectionsApi.get()
  get(@Principal() who: Principal, @ConnectionId() id: string): Promise<ConnectionDto> {
    return this.connections.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('orchestration:connections:update')
  @ConnectionsApi.update()
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
  @ConnectionsApi.delete()
  delete(@Origin() origin: RequestOrigin, @ConnectionId() id: string): Promise<void> {
    return this.connections.delete(origin, id);
  }
}
