import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import type { OffsetPage } from '../../common/pagination/offset-pagination';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { SearchTokensDto, SearchTokensV2Dto } from './dto/search-tokens.dto';
import { TokensApi } from './dto/tokens.openapi';
import { TokenPatch, UpdateTokenDto, UpdateTokenPipe } from './dto/update-token.dto';
import { ParseTokenIdPipe } from './data/token-id';
import { TokenListQuery, TokenListQueryPipe } from './search/list-query';
import { CursorTokenPage, TokenDto } from './token-answer';
import { TokenizeService } from './tokenize/tokenize.service';
import { TokenSearchService } from './search/token-search.service';
import { TokensService } from './tokens.service';

const TokenId = () => Param('id', new ParseTokenIdPipe());

/**
 * Writes take the request's origin (`@Origin()`) and their services write their own audit rows with the
 * change. Reads and searches keep `@Audited` (the interceptor logs them once they succeed) and take the
 * origin too: a read through a reveal rule writes `reveal` audit rows, and keeps its answer out of
 * idempotency records through the request's claim. The OpenAPI description: dto/tokens.openapi.ts.
 */
@ApiTags('Tokens')
@Controller()
export class TokensController {
  constructor(
    private readonly tokenizer: TokenizeService,
    private readonly tokens: TokensService,
    private readonly searches: TokenSearchService,
  ) {}

  @Post('tokenize')
  @RequirePermissions('token:create', { perToken: true })
  @TokensApi.tokenize()
  tokenize(@Origin() origin: RequestOrigin, @Body() body: unknown): Promise<unknown> {
    return this.tokenizer.tokenize(origin, body);
  }

  @Post('tokens')
  @RequirePermissions('token:create', { perToken: true })
  @TokensApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: unknown): Promise<TokenDto> {
    return this.tokenizer.createOne(origin, body);
  }

  @Get('tokens')
  @RequirePermissions('token:read', { perToken: true })
  @Audited('token', 'read')
  @TokensApi.list()
  list(
    @Origin() origin: RequestOrigin,
    @Query(new TokenListQueryPipe('v1')) query: TokenListQuery,
  ): Promise<OffsetPage<TokenDto>> {
    return this.searches.list(origin, query);
  }

  @Post('tokens/search')
  @HttpCode(200)
  @RequirePermissions('token:search', { perToken: true })
  @Audited('token', 'search')
  @TokensApi.search()
  search(@Origin() origin: RequestOrigin, @Body() body: SearchTokensDto): Promise<OffsetPage<TokenDto>> {
    return this.searches.search(origin, body);
  }

  @Get('v2/tokens')
  @RequirePermissions('token:read', { perToken: true })
  @Audited('token', 'read')
  @TokensApi.listV2()
  listV2(
    @Origin() origin: RequestOrigin,
    @Query(new TokenListQueryPipe('v2')) query: TokenListQuery,
  ): Promise<CursorTokenPage> {
    return this.searches.listV2(origin, query);
  }

  @Post('v2/tokens/search')
  @HttpCode(200)
  @RequirePermissions('token:search', { perToken: true })
  @Audited('token', 'search')
  @TokensApi.searchV2()
  searchV2(@Origin() origin: RequestOrigin, @Body() body: SearchTokensV2Dto): Promise<CursorTokenPage> {
    return this.searches.searchV2(origin, body);
  }

  @Get('tokens/:id')
  @RequirePermissions('token:read', { perToken: true })
  @Audited('token', 'read')
  @TokensApi.get()
  get(@Origin() origin: RequestOrigin, @TokenId() id: string): Promise<TokenDto> {
    return this.tokens.get(origin, id);
  }

  @Patch('tokens/:id')
  @RequirePermissions('token:update', { perToken: true })
  @TokensApi.update()
  update(
    @Origin() origin: RequestOrigin,
    @TokenId() id: string,
    @TokenPatch(new UpdateTokenPipe()) body: UpdateTokenDto,
  ): Promise<TokenDto> {
    return this.tokens.update(origin, id, body);
  }

  @Delete('tokens/:id')
  @HttpCode(204)
  @RequirePermissions('token:delete', { perToken: true })
  @TokensApi.delete()
  delete(@Origin() origin: RequestOrigin, @TokenId() id: string): Promise<void> {
    return this.tokens.delete(origin, id);
  }
}
