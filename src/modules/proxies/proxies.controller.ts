import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiConsumes, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../common/pipes/parse-id.pipe';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { ListProxiesQueryDto } from './dto/list-proxies-query.dto';
import { CreateProxyDto, PatchProxyDto, ProxyDto, ProxyPageDto, UpdateProxyDto } from './dto/proxy.dto';
import { ProxiesService } from './proxies.service';

const ProxyId = () => Param('id', new ParseIdPipe('Proxy'));

const POLICY =
  '`destination_url` must pass the outbound policy (http or https; a public address unless listed in ' +
  'OUTBOUND_ALLOWED_HOSTS), else 400.';

@ApiTags('Proxies')
@Controller('proxies')
export class ProxiesController {
  constructor(private readonly proxies: ProxiesService) {}

  @Post()
  @RequirePermissions('proxy:create')
  @ApiOperation({ operationId: 'createProxy', summary: 'Create a pre-configured proxy', description: POLICY })
  @ApiCreatedResponse({ type: ProxyDto })
  create(@Origin() origin: RequestOrigin, @Body() body: CreateProxyDto): Promise<ProxyDto> {
    return this.proxies.create(origin, body);
  }

  @Get()
  @RequirePermissions('proxy:read')
  @Audited('proxy', 'read', { message: 'Proxies listed' })
  @ApiOperation({ operationId: 'listProxies', summary: 'List pre-configured proxies' })
  @ApiOkResponse({ type: ProxyPageDto })
  list(@Principal() who: Principal, @Query() query: ListProxiesQueryDto): Promise<ProxyPageDto> {
    return this.proxies.list(who, query);
  }

  @Get(':id')
  @RequirePermissions('proxy:read')
  @Audited('proxy', 'read')
  @ApiOperation({ operationId: 'getProxy', summary: 'Get a pre-configured proxy' })
  @ApiOkResponse({ type: ProxyDto })
  get(@Principal() who: Principal, @ProxyId() id: string): Promise<ProxyDto> {
    return this.proxies.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('proxy:update')
  @ApiOperation({
    operationId: 'updateProxy',
    summary: 'Replace a pre-configured proxy',
    description: `\`require_auth\` omitted is true. ${POLICY}`,
  })
  @ApiOkResponse({ type: ProxyDto })
  update(
    @Origin() origin: RequestOrigin,
    @ProxyId() id: string,
    @Body() body: UpdateProxyDto,
  ): Promise<ProxyDto> {
    return this.proxies.update(origin, id, body, true);
  }

  @Patch(':id')
  @HttpCode(204)
  @RequirePermissions('proxy:update')
  @ApiConsumes('application/merge-patch+json', 'application/json')
  @ApiOperation({
    operationId: 'patchProxy',
    summary: 'Change some fields of a pre-configured proxy',
    description: `204 without a body, as Basis Theory answers it. ${POLICY}`,
  })
  async patch(
    @Origin() origin: RequestOrigin,
    @ProxyId() id: string,
    @Body() body: PatchProxyDto,
  ): Promise<void> {
    await this.proxies.update(origin, id, body, false);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('proxy:delete')
  @ApiOperation({
    operationId: 'deleteProxy',
    summary: 'Delete a pre-configured proxy',
    description: 'Requests naming its key are refused (404) from then on.',
  })
  delete(@Origin() origin: RequestOrigin, @ProxyId() id: string): Promise<void> {
    return this.proxies.delete(origin, id);
  }
}
