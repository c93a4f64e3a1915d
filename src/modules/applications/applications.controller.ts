import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { NeverReplayed } from '../../common/context/never-replayed.decorator';
import { problemContent } from '../../common/errors/problem-details.dto';
import { ParseIdPipe } from '../../common/pipes/parse-id.pipe';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { ApplicationsService } from './applications.service';
import { ApiKeyDto, ApplicationDto, ApplicationPageDto } from './dto/application.dto';
import { CreateApplicationDto } from './dto/create-application.dto';
import { ListApplicationsQueryDto } from './dto/list-applications-query.dto';
import { UpdateApplicationDto } from './dto/update-application.dto';

const AppId = () => Param('id', new ParseIdPipe('Application'));

const GRANTS =
  'The caller must hold every management permission it grants, and every management permission the ' +
  'application it acts on holds (else 403).';
const NOT_REPLAYED =
  'BT-IDEMPOTENCY-KEY is ignored here: every call makes a new key, so that no other holder of a key of ' +
  'the calling application is ever sent it, and no idempotency record keeps it.';
const LastAdministrator = (what: string) =>
  ApiConflictResponse({
    description: `${what} would leave the tenant without an application holding application:create and application:update (with a key).`,
    content: problemContent(),
  });

@ApiTags('Applications')
@Controller('applications')
export class ApplicationsController {
  constructor(private readonly applications: ApplicationsService) {}

  @Post()
  @RequirePermissions('application:create')
  // The answer holds the new key: no idempotency record may keep it for a replay.
  @NeverReplayed()
  @ApiOperation({
    operationId: 'createApplication',
    summary: 'Create an application',
    description: `The response holds the new key in clear; it is never shown again. ${NOT_REPLAYED} ${GRANTS}`,
  })
  @ApiCreatedResponse({ type: ApplicationDto })
  create(@Origin() origin: RequestOrigin, @Body() body: CreateApplicationDto): Promise<ApplicationDto> {
    return this.applications.create(origin, body);
  }

  @Get()
  @RequirePermissions('application:read')
  @Audited('application', 'read')
  @ApiOperation({ operationId: 'listApplications', summary: 'List applications' })
  @ApiOkResponse({ type: ApplicationPageDto })
  list(@Principal() who: Principal, @Query() query: ListApplicationsQueryDto): Promise<ApplicationPageDto> {
    return this.applications.list(who, query);
  }

  @Get('key')
  @RequirePermissions()
  @Audited('application', 'read')
  @ApiOperation({ operationId: 'getApplicationByKey', summary: 'Get the application of the calling key' })
  @ApiOkResponse({ type: ApplicationDto })
  getByKey(@Principal() who: Principal): Promise<ApplicationDto> {
    return this.applications.get(who, who.applicationId);
  }

  @Get(':id')
  @RequirePermissions('application:read')
  @Audited('application', 'read')
  @ApiOperation({ operationId: 'getApplication', summary: 'Get an application' })
  @ApiOkResponse({ type: ApplicationDto })
  get(@Principal() who: Principal, @AppId() id: string): Promise<ApplicationDto> {
    return this.applications.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('application:update')
  @ApiOperation({ operationId: 'updateApplication', summary: 'Update an application', description: GRANTS })
  @ApiOkResponse({ type: ApplicationDto })
  @LastAdministrator(
    'Removing application:create or application:update from the last application holding them',
  )
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
  @ApiOperation({
    operationId: 'deleteApplication',
    summary: 'Delete an application',
    description: `Its keys stop working at once, and so do the sessions it authorized. ${GRANTS}`,
  })
  @LastAdministrator('Deleting it')
  delete(@Origin() origin: RequestOrigin, @AppId() id: string): Promise<void> {
    return this.applications.delete(origin, id);
  }

  @Get(':id/keys')
  @RequirePermissions('application:read')
  @Audited('application', 'read', { message: 'Application keys listed' })
  @ApiOperation({
    operationId: 'listApplicationKeys',
    summary: "List an application's keys (never in clear)",
  })
  @ApiOkResponse({ type: ApiKeyDto, isArray: true })
  listKeys(@Principal() who: Principal, @AppId() id: string): Promise<ApiKeyDto[]> {
    return this.applications.listKeys(who, id);
  }

  @Get(':id/keys/:keyId')
  @RequirePermissions('application:read')
  @Audited('application', 'read', { message: (req) => `Application key ${String(req.params.keyId)} read` })
  @ApiOperation({
    operationId: 'getApplicationKey',
    summary: "Get one of an application's keys (never in clear)",
  })
  @ApiOkResponse({ type: ApiKeyDto })
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
  @ApiOperation({
    operationId: 'createApplicationKey',
    summary: 'Create a key (rotation)',
    description: `The response holds the new key in clear; it is never shown again. Old keys keep working until deleted. ${NOT_REPLAYED} ${GRANTS}`,
  })
  @ApiCreatedResponse({ type: ApiKeyDto })
  createKey(@Origin() origin: RequestOrigin, @AppId() id: string): Promise<ApiKeyDto> {
    return this.applications.createKey(origin, id);
  }

  @Delete(':id/keys/:keyId')
  @HttpCode(204)
  @RequirePermissions('application:update')
  @ApiOperation({ operationId: 'deleteApplicationKey', summary: 'Revoke a key', description: GRANTS })
  @LastAdministrator('Deleting the last key of the last application holding them')
  deleteKey(
    @Origin() origin: RequestOrigin,
    @AppId() id: string,
    @Param('keyId', new ParseIdPipe('Application key')) keyId: string,
  ): Promise<void> {
    return this.applications.deleteKey(origin, id, keyId);
  }
}
