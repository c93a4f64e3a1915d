import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { ApplicationsService } from './applications.service';
import { ListPermissionsQueryDto } from './dto/list-applications-query.dto';
import { PermissionDto } from './dto/application.dto';

@ApiTags('Permissions')
@Controller('permissions')
export class PermissionsController {
  constructor(private readonly applications: ApplicationsService) {}

  @Get()
  @RequirePermissions()
  @ApiOperation({ operationId: 'listPermissions', summary: 'List the permission catalog' })
  @ApiOkResponse({ type: PermissionDto, isArray: true })
  list(@Query() query: ListPermissionsQueryDto): PermissionDto[] {
    return this.applications.permissions(query.application_type);
  }
}
