import { Module } from '@nestjs/common';
import { ExpressionEvaluator } from './expression-evaluator';
import { TokenRetention } from './token-retention';
import { TokenRetentionRepository } from './token-retention.repository';
import { TokensController } from './tokens.controller';
import { TokensService } from './tokens.service';

@Module({
  controllers: [TokensController],
  // A factory: the evaluator's constructor takes limits (tests pass their own), not providers.
  providers: [
    TokensService,
    TokenRetentionRepository,
    TokenRetention,
    { provide: ExpressionEvaluator, useFactory: () => new ExpressionEvaluator() },
  ],
  exports: [TokensService],
})
export class TokensModule {}
