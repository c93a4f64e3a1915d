import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { TokensModule } from '../tokens/tokens.module';
import { TokenImportKeyEntity } from './entities/token-import-key.entity';
import { TokenImportResultEntity } from './entities/token-import-result.entity';
import { TokenImportEntity } from './entities/token-import.entity';
import { ImportRunnerService } from './import-runner.service';
import { ImportsController } from './imports.controller';
import { ImportsRepository } from './imports.repository';
import { ImportsService } from './imports.service';

/**
 * Card imports (docs/migration.md): the tenant's OpenPGP import key, encrypted uploads of cards and the
 * jobs that make their tokens and store them for buyers. Above the vault and orchestration: it uses
 * both (tokens through `ImportedCards`, buyers through `BuyersService`), and neither knows of it.
 */
@Module({
  imports: [
    DatabaseModule.forFeature([TokenImportKeyEntity, TokenImportEntity, TokenImportResultEntity]),
    TokensModule,
    OrchestrationModule,
  ],
  controllers: [ImportsController],
  providers: [ImportsRepository, ImportsService, ImportRunnerService],
})
export class ImportsModule {}
