import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../common/pipes/parse-id.pipe';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { ListProxiesQueryDto } from './dto/list-proxies-query.dto';
import { CreateProxyDto, PatchProxyDto, ProxyDto, ProxyPageDto, UpdateProxyDto } from './dto/proxy.dto';
import { ProxiesService } from './proxies.service';
import { ProxiesApi } from './dto/proxies.openapi';

const ProxyId = () => Param('id', new ParseIdPipe('Proxy'));

@ApiTags('Proxies')
@Controller('proxies')
export class ProxiesController {
  constructor(private readonly proxies: ProxiesService) {}

  @Post()
  @RequirePermissions('proxy:create')
  @ProxiesApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: CreateProxyDto): Promise<ProxyDto> {
    return this.proxies.create(origin, body);
  }

  @Get()
  @RequirePermissions('proxy:read')
  @Audited('proxy', 'read', { message: 'Proxies listed' })
  @ProxiesApi.list()
  list(@Principal() who: Principal, @Query() query: ListProxiesQueryDto): Promise<ProxyPageDto> {
    return this.proxies.list(who, query);
  }

  @Get(':id')
  @RequirePermissions('proxy:read')
  @Audited('proxy', 'read')
  @ProxiesApi.get()
  get(@Principal() who: Principal, @ProxyId() id: string): Promise<ProxyDto> {
    return this.proxies.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('proxy:update')
  @ProxiesApi.update()
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
  @ProxiesApi.patch()
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
  @ProxiesApi.delete()
  delete(@Origin() origin: RequestOrigin, @ProxyId() id: string): Promise<void> {
    return this.proxies.delete(origin, id);
  }
}
