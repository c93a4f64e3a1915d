import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Audited } from '../../common/audit/audited.decorator';
import { Principal } from '../../common/auth/principal';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { OffsetPaginationQueryDto } from '../../common/pagination/offset-pagination.dto';
import { ParseIdPipe } from '../../common/pipes/parse-id.pipe';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import {
  ApplePayCertificateDto,
  CreatedApplePayKeyDto,
  CreateGooglePayKeyDto,
  MerchantKeyDto,
  MerchantKeyPageDto,
} from './dto/merchant-key.dto';
import { WalletsApi } from './dto/wallets.openapi';
import { MerchantKeysService } from './merchant-keys.service';

const KeyId = () => Param('id', new ParseIdPipe('Merchant key'));

/** Apple Pay merchant keys: create (with a CSR), give the certificate, list, get, delete. */
@ApiTags('Wallets')
@Controller('wallets/apple-pay/merchant-keys')
export class ApplePayMerchantKeysController {
  constructor(private readonly keys: MerchantKeysService) {}

  @Post()
  @RequirePermissions('wallet:manage')
  @WalletsApi.applePay.create()
  create(@Origin() origin: RequestOrigin): Promise<CreatedApplePayKeyDto> {
    return this.keys.createApplePay(origin);
  }

  @Put(':id')
  @RequirePermissions('wallet:manage')
  @WalletsApi.applePay.certificate()
  certificate(
    @Origin() origin: RequestOrigin,
    @KeyId() id: string,
    @Body() body: ApplePayCertificateDto,
  ): Promise<MerchantKeyDto> {
    return this.keys.setCertificate(origin, id, body.certificate);
  }

  @Get()
  @RequirePermissions('wallet:manage')
  @Audited('wallet_key', 'read', { message: 'Apple Pay merchant keys listed' })
  @WalletsApi.applePay.list()
  list(@Principal() who: Principal, @Query() query: OffsetPaginationQueryDto): Promise<MerchantKeyPageDto> {
    return this.keys.list(who, 'apple_pay', query);
  }

  @Get(':id')
  @RequirePermissions('wallet:manage')
  @Audited('wallet_key', 'read')
  @WalletsApi.applePay.get()
  get(@Principal() who: Principal, @KeyId() id: string): Promise<MerchantKeyDto> {
    return this.keys.get(who, 'apple_pay', id);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('wallet:manage')
  @WalletsApi.applePay.delete()
  delete(@Origin() origin: RequestOrigin, @KeyId() id: string): Promise<void> {
    return this.keys.delete(origin, 'apple_pay', id);
  }
}

/** Google Pay merchant keys: create (active at once), list, get, delete. */
@ApiTags('Wallets')
@Controller('wallets/google-pay/merchant-keys')
export class GooglePayMerchantKeysController {
  constructor(private readonly keys: MerchantKeysService) {}

  @Post()
  @RequirePermissions('wallet:manage')
  @WalletsApi.googlePay.create()
  create(@Origin() origin: RequestOrigin, @Body() body: CreateGooglePayKeyDto): Promise<MerchantKeyDto> {
    return this.keys.createGooglePay(origin, body);
  }

  @Get()
  @RequirePermissions('wallet:manage')
  @Audited('wallet_key', 'read', { message: 'Google Pay merchant keys listed' })
  @WalletsApi.googlePay.list()
  list(@Principal() who: Principal, @Query() query: OffsetPaginationQueryDto): Promise<MerchantKeyPageDto> {
    return this.keys.list(who, 'google_pay', query);
  }

  @Get(':id')
  @RequirePermissions('wallet:manage')
  @Audited('wallet_key', 'read')
  @WalletsApi.googlePay.get()
  get(@Principal() who: Principal, @KeyId() id: string): Promise<MerchantKeyDto> {
    return this.keys.get(who, 'google_pay', id);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('wallet:manage')
  @WalletsApi.googlePay.delete()
  delete(@Origin() origin: RequestOrigin, @KeyId() id: string): Promise<void> {
    return this.keys.delete(origin, 'google_pay', id);
  }
}
