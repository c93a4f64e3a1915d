import { Body, Controller, Get, HttpCode, Post, Req } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import type { RequestWithPrincipal } from '../../common/auth/principal';
import { SealService, SealStatus } from './seal.service';

export class UnsealDto {
  /** One share line, as the ceremony printed it. */
  @IsString()
  @MaxLength(200)
  share!: string;
}

/**
 * The custodians' routes of a `split` server (docs/keys.md). No API key: a sealed vault has none to check.
 * Operator routes, left out of the OpenAPI document as the card elements are.
 */
@ApiExcludeController()
@RequirePermissions([], { public: true })
@Controller('sys')
export class SysController {
  constructor(private readonly seal: SealService) {}

  @Get('seal-status')
  status(): Promise<SealStatus> {
    return this.seal.status();
  }

  @Post('unseal')
  @HttpCode(200)
  unseal(@Body() body: UnsealDto, @Req() req: RequestWithPrincipal): Promise<SealStatus> {
    return this.seal.enter(body.share, req.clientAddress ?? req.socket?.remoteAddress ?? 'unknown');
  }

  @Post('unseal/reset')
  @HttpCode(200)
  reset(): Promise<SealStatus> {
    return this.seal.reset();
  }
}
