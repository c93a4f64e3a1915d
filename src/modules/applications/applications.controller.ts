import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { NeverReplayed } from '../../common/context/never-replayed.decorator';
import { ParseIdPipe } from '../../common/pipes/parse-id.pipe';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { ApplicationsService } from './applications.service';
import { ApiKeyDto, ApplicationDto, ApplicationPageDto } from './dto/application.dto';
import { CreateApplicationDto } from './dto/create-application.dto';
import { ListApplicationsQueryDto } from './dto/list-applications-query.dto';
import { UpdateApplicationDto } from './dto/update-application.dto';
import { ApplicationsApi } from './dto/applications.openapi';

const AppId = () => Param('id', new ParseIdPipe('Application'));

@ApiTags('Applications')
@Controller('applications')
export class ApplicationsController {
  constructor(private readonly applications: ApplicationsService) {}

  @Post()
  @RequirePermissions('application:create')
  // The answer holds the new key: no idempotency record may keep it for a replay.
  @NeverReplayed()
  @ApplicationsApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: CreateApplicationDto): Promise<ApplicationDto> {
    return this.applications.create(origin, body);
  }

  @Get()
  @RequirePermissions('application:read')
  @Audited('application', 'read')
  @ApplicationsApi.list()
  list(@Principal() who: Principal, @Query() query: ListApplicationsQueryDto): Promise<ApplicationPageDto> {
    return this.applications.list(who, query);
  }

  @Get('key')
  @RequirePermissions()
  @Audited('application', 'read')
  @ApplicationsApi.getByKey()
  getByKey(@Principal() who: Principal): Promise<ApplicationDto> {
    return this.applications.get(who, who.applicationId);
  }

  @Get(':id')
  @RequirePermissions('application:read')
  @Audited('application', 'read')
  @ApplicationsApi.get()
  get(@Principal() who: Principal, @AppId() id: string): Promise<ApplicationDto> {
    return this.applications.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('application:update')
  @ApplicationsApi.update()
  update(
    @Origin() origin: RequestOrigin,
    @AppId() id: string,
    @Body() body: UpdateApplicationDto,
  ): Promise<ApplicationDto> {
    return this.applications.update(origin, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('application:delete')
  @ApplicationsApi.delete()
  delete(@Origin() origin: RequestOrigin, @AppId() id: string): Promise<void> {
    return this.applications.delete(origin, id);
  }

  @Get(':id/keys')
  @RequirePermissions('application:read')
  @Audited('application', 'read', { message: 'Application keys listed' })
  @ApplicationsApi.listKeys()
  listKeys(@Principal() who: Principal, @AppId() id: string): Promise<ApiKeyDto[]> {
    return this.applications.listKeys(who, id);
  }

  @Get(':id/keys/:keyId')
  @RequirePermissions('application:read')
  @Audited('application', 'read', { message: (req) => `Application key ${String(req.params.keyId)} read` })
  @ApplicationsApi.getKey()
  getKey(
    @Principal() who: Principal,
    @AppId() id: string,
    @Param('keyId', new ParseIdPipe('Application key')) keyId: string,
  ): Promise<ApiKeyDto> {
    return this.applications.getKey(who, id, keyId);
  }

  @Post(':id/keys')
  @RequirePermissions('application:update')
  // The answer holds the new key: no idempotency record may keep it for a replay.
  @NeverReplayed()
  @ApplicationsApi.createKey()
  createKey(@Origin() origin: RequestOrigin, @AppId() id: string): Promise<ApiKeyDto> {
    return this.applications.createKey(origin, id);
  }

  @Delete(':id/keys/:keyId')
  @HttpCode(204)
  @RequirePermissions('application:update')
  @ApplicationsApi.deleteKey()
  deleteKey(
    @Origin() origin: RequestOrigin,
    @AppId() id: string,
    @Param('keyId', new ParseIdPipe('Application key')) keyId: string,
  ): Promise<void> {
    return this.applications.deleteKey(origin, id, keyId);
  }
}
