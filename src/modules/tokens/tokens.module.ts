import { Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { DatabaseModule } from '../../database/database.module';
import { CardEnumerationCountEntity } from './entities/card-enumeration-count.entity';
import { CardEnumerationGroupEntity } from './entities/card-enumeration-group.entity';
import { TokenCvcEntity } from './entities/token-cvc.entity';
import { TokenSearchIndexEntity } from './entities/token-search-index.entity';
import { TokenEntity } from './entities/token.entity';
import { DEFAULT_LIMITS, ExpressionEvaluator } from './expressions/expression-evaluator';
import { CardEnumerationRepository } from './enumeration/card-enumeration.repository';
import { CardEnumerationGuard } from './enumeration/card-enumeration.service';
import { TokenRetention } from './retention/token-retention';
import { TokenRetentionRepository } from './retention/token-retention.repository';
import { TokenSearchRepository } from './search/token-search.repository';
import { TokenSearchService } from './search/token-search.service';
import { TokenReads } from './token-reads';
import { PublicTokenizeLimit } from './tokenize/public-tokenize-limit';
import { ImportedCards } from './tokenize/imported-cards';
import { TokenizeService } from './tokenize/tokenize.service';
import { TokensController } from './tokens.controller';
import { TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

@Module({
  imports: [
    DatabaseModule.forFeature([
      TokenEntity,
      TokenSearchIndexEntity,
      TokenCvcEntity,
      CardEnumerationCountEntity,
      CardEnumerationGroupEntity,
    ]),
  ],
  controllers: [TokensController],
  // A factory: the evaluator's constructor takes limits (tests pass their own), not providers; the pool
  // size comes from EXPRESSION_WORKERS.
  providers: [
    TokenizeService,
    ImportedCards,
    PublicTokenizeLimit,
    TokensService,
    TokenReads,
    TokenSearchService,
    TokensRepository,
    TokenSearchRepository,
    TokenRetentionRepository,
    TokenRetention,
    {
      provide: ExpressionEvaluator,
      inject: [AppConfig],
      useFactory: (config: AppConfig) =>
        new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: config.EXPRESSION_WORKERS }),
    },
    CardEnumerationGuard,
    CardEnumerationRepository,
  ],
  exports: [TokensService, TokenizeService, ImportedCards],
})
export class TokensModule {}
