import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { TokensModule } from '../tokens/tokens.module';
import { WalletMerchantKeyEntity } from './entities/wallet-merchant-key.entity';
import { WalletReplayEntity } from './entities/wallet-replay.entity';
import { ApplePayMerchantKeysController, GooglePayMerchantKeysController } from './merchant-keys.controller';
import { MerchantKeysService } from './merchant-keys.service';
import { WalletReplayRetention } from './wallet-replay-retention';
import { WalletRoots } from './wallet-roots';
import { WalletTokensController } from './wallet-tokens.controller';
import { WalletTokensService } from './wallet-tokens.service';
import { WalletsRepository } from './wallets.repository';

/**
 * Wallets (docs/wallets.md): the tenants' Apple Pay and Google Pay merchant keys, and wallet payloads
 * verified, decrypted and made into tokens through the tokens module's tokenize path.
 */
@Module({
  imports: [DatabaseModule.forFeature([WalletMerchantKeyEntity, WalletReplayEntity]), TokensModule],
  controllers: [ApplePayMerchantKeysController, GooglePayMerchantKeysController, WalletTokensController],
  providers: [
    WalletsRepository,
    MerchantKeysService,
    WalletTokensService,
    WalletRoots,
    WalletReplayRetention,
  ],
})
export class WalletsModule {}
