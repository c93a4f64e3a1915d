import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
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
  StoredPaymentMethodDto,
  StorePaymentMethodDto,
} from './buyer.dto';
import { BuyersService } from './buyers.service';

const BuyerId = () => Param('id', new ParseIdPipe('Buyer'));

@ApiTags('Orchestration')
@Controller('orchestration/buyers')
export class BuyersController {
  constructor(private readonly buyers: BuyersService) {}

  @Post()
  @RequirePermissions('orchestration:buyers:create')
  @ApiOperation({
    operationId: 'createBuyer',
    summary: 'Create a buyer',
    description: '`external_identifier` is unique in the tenant: a second buyer with it is a 409.',
  })
  @ApiCreatedResponse({ type: BuyerDto })
  create(@Origin() origin: RequestOrigin, @Body() body: BuyerRequestDto): Promise<BuyerDto> {
    return this.buyers.create(origin, body);
  }

  @Get()
  @RequirePermissions('orchestration:buyers:read')
  @Audited('buyer', 'read', { message: 'Buyers listed' })
  @ApiOperation({
    operationId: 'listBuyers',
    summary: 'List buyers, newest first',
    description: '`search` matches the start of the display name or of the external identifier, in any case.',
  })
  @ApiOkResponse({ type: BuyerPageDto })
  list(@Principal() who: Principal, @Query() query: ListBuyersQueryDto): Promise<BuyerPageDto> {
    return this.buyers.list(who, query);
  }

  @Get(':id')
  @RequirePermissions('orchestration:buyers:read')
  @Audited('buyer', 'read')
  @ApiOperation({ operationId: 'getBuyer', summary: 'Get a buyer' })
  @ApiOkResponse({ type: BuyerDto })
  get(@Principal() who: Principal, @BuyerId() id: string): Promise<BuyerDto> {
    return this.buyers.get(who, id);
  }

  @Put(':id')
  @RequirePermissions('orchestration:buyers:update')
  @ApiOperation({
    operationId: 'updateBuyer',
    summary: 'Update a buyer',
    description:
      'A field left out keeps its value; `null` clears it. A taken `external_identifier` is a 409.',
  })
  @ApiOkResponse({ type: BuyerDto })
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
  @ApiOperation({
    operationId: 'deleteBuyer',
    summary: 'Delete a buyer',
    description: 'Its stored cards are removed from it (the tokens stay); its transactions keep showing it.',
  })
  @ApiNoContentResponse()
  delete(@Origin() origin: RequestOrigin, @BuyerId() id: string): Promise<void> {
    return this.buyers.delete(origin, id);
  }

  @Post(':id/payment-methods')
  @RequirePermissions('orchestration:buyers:update')
  @ApiOperation({
    operationId: 'storeBuyerPaymentMethod',
    summary: 'Store a card token for the buyer',
    description:
      'Needs `token:use` on the card token. 201 with the stored card; 200 with the one already stored when the ' +
      'buyer has this card (the same fingerprint). A token stored for another buyer is a 409. Counted by the ' +
      'card enumeration guard as a read that shows the fingerprint would be.',
  })
  @ApiCreatedResponse({ type: StoredPaymentMethodDto })
  @ApiOkResponse({ type: StoredPaymentMethodDto, description: 'The buyer already had this card' })
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
  @ApiOperation({
    operationId: 'listBuyerPaymentMethods',
    summary: "The buyer's stored cards (a plain array), most recently used first",
    description:
      'Never used: most recently added first. This order is the one a transaction with `buyer_id` and no `token` charges the first of.',
  })
  @ApiOkResponse({ type: [StoredPaymentMethodDto] })
  listMethods(@Principal() who: Principal, @BuyerId() id: string): Promise<StoredPaymentMethodDto[]> {
    return this.buyers.listMethods(who, id);
  }

  @Delete(':id/payment-methods/:token_id')
  @HttpCode(204)
  @RequirePermissions('orchestration:buyers:update')
  @ApiOperation({
    operationId: 'deleteBuyerPaymentMethod',
    summary: 'Remove a stored card from the buyer (the token stays)',
  })
  @ApiNoContentResponse()
  detach(
    @Origin() origin: RequestOrigin,
    @BuyerId() id: string,
    @Param('token_id') tokenId: string,
  ): Promise<void> {
    return this.buyers.detach(origin, id, tokenId);
  }
}
