import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Audited } from '../../../common/audit/audited.decorator';
import { Principal } from '../../../common/auth/principal';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import type { OffsetPage } from '../../../common/pagination/offset-pagination';
import { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';
import { ParseIdPipe } from '../../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { CreateRelayRefundDto, RelayRefundDto } from './relay-refund.dto';
import { RelayRefundsApi } from './relay-refunds.openapi';
import { RelayRefundsService } from './relay-refunds.service';

@ApiTags('Orchestration')
@Controller('orchestration/relay/refunds')
export class RelayRefundsController {
  constructor(private readonly relay: RelayRefundsService) {}

  @Post()
  @RequirePermissions('orchestration:relay')
  @RelayRefundsApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: CreateRelayRefundDto): Promise<RelayRefundDto> {
    return this.relay.create(origin, body);
  }

  @Get()
  @RequirePermissions('orchestration:relay')
  @Audited('relay_refund', 'read', { message: 'Relay refunds listed' })
  @RelayRefundsApi.list()
  list(
    @Principal() who: Principal,
    @Query() query: OffsetPaginationQueryDto,
  ): Promise<OffsetPage<RelayRefundDto>> {
    return this.relay.list(who, query);
  }

  @Get(':id')
  @RequirePermissions('orchestration:relay')
  @Audited('relay_refund', 'read')
  @RelayRefundsApi.get()
  get(
    @Principal() who: Principal,
    @Param('id', new ParseIdPipe('Relay refund')) id: string,
  ): Promise<RelayRefundDto> {
    return this.relay.get(who, id);
  }
}
