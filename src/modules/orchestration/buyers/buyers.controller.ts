import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Audited } from '../../../common/audit/audited.decorator';
import { Principal } from '../../../common/auth/principal';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import {
  BuyerDto,
  BuyerPageDto,
  BuyerRequestDto,
  ListBuyersQueryDto,
  SetConnectionTokensDto,
  StoredPaymentMethodDto,
  StorePaymentMethodDto,
} from './buyer.dto';
import { BuyersService } from './buyers.service';
import { ConnectionTokensService } from './connection-tokens.service';
import { BuyersApi } from './buyers.openapi';

const BuyerId = () => Param('id', new ParseIdPipe('Buyer'));

@ApiTags('Orchestration')
@Controller('orchestration/buyers')
export class BuyersController {
  constructor(
    private readonly buyers: BuyersService,
    private readonly connectionTokens: ConnectionTokensService,
  ) {}

  @Post()
  @RequirePermissions('orchestration:buyers:create')
  @BuyersApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: BuyerRequestDto): Promise<BuyerDto> {
    return this.buyers.create(origin, body);
  }

  @Get()
  @RequirePermissions('orchestration:buyers:read')
  @Audited('buyer', 'read', { message: 'Buyers listed' })
  @BuyersApi.list()
  list(@Principal() who: Principal, @Query() query: ListBuyersQueryDto): Promise<BuyerPageDto> {
    return this.buyers.list(who, query);
  }

  @Get(':id')
  @RequirePermissions('orchestration:buyers:read')
  @Audited('buyer', 'read')
  @BuyersApi.get()
  get(@Principal() who: Principal, @BuyerId() id: string): Promise<BuyerDto> {
    return this.buyers.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('orchestration:buyers:update')
  @BuyersApi.update()
  update(
    @Origin() origin: RequestOrigin,
    @BuyerId() id: string,
    @Body() body: BuyerRequestDto,
  ): Promise<BuyerDto> {
    return this.buyers.update(origin, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('orchestration:buyers:delete')
  @BuyersApi.delete()
  delete(@Origin() origin: RequestOrigin, @BuyerId() id: string): Promise<void> {
    return this.buyers.delete(origin, id);
  }

  @Post(':id/payment-methods')
  @RequirePermissions('orchestration:buyers:update')
  @BuyersApi.store()
  async store(
    @Origin() origin: RequestOrigin,
    @BuyerId() id: string,
    @Body() body: StorePaymentMethodDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StoredPaymentMethodDto> {
    return this.buyers.attach(origin, id, body, (created) => {
      if (!created) res.status(200);
    });
  }

  @Get(':id/payment-methods')
  @RequirePermissions('orchestration:buyers:read')
  @Audited('buyer', 'read', { message: 'Payment methods listed' })
  @BuyersApi.listMethods()
  listMethods(@Principal() who: Principal, @BuyerId() id: string): Promise<StoredPaymentMethodDto[]> {
    return this.buyers.listMethods(who, id);
  }

  @Delete(':id/payment-methods/:token_id')
  @HttpCode(204)
  @RequirePermissions('orchestration:buyers:update')
  @BuyersApi.detach()
  detach(
    @Origin() origin: RequestOrigin,
    @BuyerId() id: string,
    @Param('token_id') tokenId: string,
  ): Promise<void> {
    return this.buyers.detach(origin, id, tokenId);
  }

  @Put(':id/payment-methods/:payment_method_id/connection-tokens')
  @RequirePermissions('orchestration:buyers:update')
  @BuyersApi.setConnectionTokens()
  setConnectionTokens(
    @Origin() origin: RequestOrigin,
    @BuyerId() id: string,
    @Param('payment_method_id') paymentMethodId: string,
    @Body() body: SetConnectionTokensDto,
  ): Promise<StoredPaymentMethodDto> {
    return this.connectionTokens.set(origin, id, paymentMethodId, body);
  }
}
