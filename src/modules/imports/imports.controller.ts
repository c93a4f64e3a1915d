import { Controller, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { Request } from 'express';
import { Audited } from '../../common/audit/audited.decorator';
import { ClaimedAfterBody } from '../../common/context/claimed-after-body.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import {
  CreateImportQueryDto,
  ImportDto,
  ImportKeyDto,
  ImportResultPageDto,
  ImportResultsQueryDto,
} from './dto/imports.dto';
import { IMPORT_MEDIA_TYPES, ImportsService } from './imports.service';

const ImportId = () => Param('id', new ParseIdPipe('Import'));

/** Card imports (docs/migration.md). */
@ApiTags('Imports')
@Controller('tokens/imports')
export class ImportsController {
  constructor(private readonly imports: ImportsService) {}

  @Get('key')
  @RequirePermissions('token:import')
  @ApiOperation({
    operationId: 'getImportKey',
    summary: "The tenant's OpenPGP import key, made on the first request",
  })
  @ApiOkResponse({ type: ImportKeyDto })
  key(@Origin() origin: RequestOrigin): Promise<ImportKeyDto> {
    return this.imports.key(origin);
  }

  @Post()
  @HttpCode(202)
  @RequirePermissions('token:import')
  @ClaimedAfterBody()
  @ApiOperation({
    operationId: 'createImport',
    summary: 'Import cards: an OpenPGP message encrypted to the import key, holding a CSV or JSONL file',
  })
  @ApiConsumes(...IMPORT_MEDIA_TYPES)
  @ApiBody({ schema: { type: 'string', format: 'binary' } })
  @ApiAcceptedResponse({ type: ImportDto })
  create(
    @Origin() origin: RequestOrigin,
    @Req() req: Request,
    @Query() query: CreateImportQueryDto,
  ): Promise<ImportDto> {
    return this.imports.create(origin, { body: req, contentType: req.headers['content-type'] }, query.format);
  }

  @Get(':id')
  @RequirePermissions('token:import')
  @Audited('token_import', 'read')
  @ApiOperation({ operationId: 'getImport', summary: 'An import job and its progress' })
  @ApiOkResponse({ type: ImportDto })
  get(@Principal() who: Principal, @ImportId() id: string): Promise<ImportDto> {
    return this.imports.get(who, id);
  }

  @Get(':id/results')
  @RequirePermissions('token:import')
  @Audited('token_import', 'read', { message: 'Import results listed' })
  @ApiOperation({ operationId: 'listImportResults', summary: "An import's results, line by line" })
  @ApiOkResponse({ type: ImportResultPageDto })
  results(
    @Principal() who: Principal,
    @ImportId() id: string,
    @Query() query: ImportResultsQueryDto,
  ): Promise<ImportResultPageDto> {
    return this.imports.results(who, id, query);
  }
}
