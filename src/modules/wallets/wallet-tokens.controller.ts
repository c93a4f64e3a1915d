import { Body, Controller, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import type { TokenDto } from '../tokens/token-answer';
import { ApplePayTokenRequestDto, GooglePayTokenRequestDto } from './dto/wallet-token.dto';
import { WalletsApi } from './dto/wallets.openapi';
import { WalletTokensService } from './wallet-tokens.service';

/** Wallet payloads in, tokens out (docs/wallets.md). */
@ApiTags('Wallets')
@Controller('wallets')
export class WalletTokensController {
  constructor(private readonly wallets: WalletTokensService) {}

  @Post('apple-pay/tokens')
  @RequirePermissions('token:create', { perToken: true })
  @WalletsApi.appleToken()
  applePay(@Origin() origin: RequestOrigin, @Body() body: ApplePayTokenRequestDto): Promise<TokenDto> {
    return this.wallets.applePay(origin, body.payment_data);
  }

  @Post('google-pay/tokens')
  @RequirePermissions('token:create', { perToken: true })
  @WalletsApi.googleToken()
  googlePay(@Origin() origin: RequestOrigin, @Body() body: GooglePayTokenRequestDto): Promise<TokenDto> {
    return this.wallets.googlePay(origin, body.token);
  }
}
