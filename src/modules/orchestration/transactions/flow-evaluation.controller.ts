import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { FlowEvaluationDto } from '../flows/flow-rule.dto';
import { CreateTransactionDto } from './transaction.dto';
import { TransactionCreationService } from './transaction-creation.service';
import { FlowEvaluationApi } from './flow-evaluation.openapi';

/**
 * The routing dry run, under the flow's path but here beside the transaction create whose checks it runs
 * (the rules themselves live in `flows/`, which knows nothing of transactions).
 */

@ApiTags('Orchestration')
@Controller('orchestration/flows/card-transaction')
export class FlowEvaluationController {
  constructor(private readonly creation: TransactionCreationService) {}

  @Post('evaluate')
  @HttpCode(200)
  @RequirePermissions(['orchestration:flows:read', 'token:use'], { perToken: true })
  @FlowEvaluationApi.evaluate()
  evaluate(@Origin() origin: RequestOrigin, @Body() body: CreateTransactionDto): Promise<FlowEvaluationDto> {
    return this.creation.evaluate(origin.actor, body);
  }
}
