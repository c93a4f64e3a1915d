import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { TenantDto } from './dto/tenant.dto';
import { TenantsService } from './tenants.service';

@ApiTags('Tenants')
@Controller('tenants')
export class TenantsController {
  constructor(private readonly tenants: TenantsService) {}

  @Get('self')
  @RequirePermissions('tenant:read')
  @Audited('tenant', 'read')
  @ApiOperation({ operationId: 'getTenant', summary: 'Get the tenant of the calling key' })
  @ApiOkResponse({ type: TenantDto })
  getSelf(@Principal() who: Principal): Promise<TenantDto> {
    return this.tenants.getSelf(who);
  }
}
