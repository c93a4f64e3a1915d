import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { ConnectionFormulaDto } from './formula.dto';
import { FORMULAS } from './formulas';

/**
 * The formula catalog. Basis Theory's clients know it under two paths and two methods; all four
 * answer the same array (the documented one is `GET /orchestration/connection_formulas`).
 */
@ApiTags('Orchestration')
@Controller('orchestration')
@RequirePermissions('orchestration:connection_formulas')
export class FormulasController {
  @Get('connection_formulas')
  @ApiOperation({ operationId: 'listConnectionFormulas', summary: 'List the connection formulas' })
  @ApiOkResponse({ type: [ConnectionFormulaDto] })
  list(): readonly ConnectionFormulaDto[] {
    return FORMULAS;
  }

  @Post('connection_formulas')
  @HttpCode(200)
  @ApiExcludeEndpoint()
  listByPost(): readonly ConnectionFormulaDto[] {
    return FORMULAS;
  }

  @Get('connection/formulas')
  @ApiExcludeEndpoint()
  listAlias(): readonly ConnectionFormulaDto[] {
    return FORMULAS;
  }

  @Post('connection/formulas')
  @HttpCode(200)
  @ApiExcludeEndpoint()
  listAliasByPost(): readonly ConnectionFormulaDto[] {
    return FORMULAS;
  }
}
