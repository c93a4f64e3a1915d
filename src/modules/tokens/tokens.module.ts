import { Module } from '@nestjs/common';
import { ExpressionEvaluator } from './expression-evaluator';
import { TokenJobsService } from './token-jobs.service';
import { TokenSearchRepository } from './token-search.repository';
import { TokenizeService } from './tokenize.service';
import { TokensController } from './tokens.controller';
import { TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

@Module({
  controllers: [TokensController],
  // A factory: the evaluator's constructor takes limits (tests pass their own), not providers.
  providers: [
    TokenizeService,
    TokensService,
    TokensRepository,
    TokenSearchRepository,
    TokenJobsService,
    { provide: ExpressionEvaluator, useFactory: () => new ExpressionEvaluator() },
  ],
  exports: [TokensService],
})
export class TokensModule {}
