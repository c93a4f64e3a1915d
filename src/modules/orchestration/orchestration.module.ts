import { Module } from '@nestjs/common';
import { TokensModule } from '../tokens/tokens.module';
import { ApprovalsController } from './approvals/approvals.controller';
import { ConnectionsController } from './connections/connections.controller';
import { ConnectionsService } from './connections/connections.service';
import { FormulasController } from './formulas/formulas.controller';
import { ProcessorRegistry } from './processors/processor.registry';
import { SettlementService } from './transactions/settlement.service';
import { TransactionsController } from './transactions/transactions.controller';
import { TransactionsService } from './transactions/transactions.service';

/** Payment orchestration: formulas, connections, transactions, the approval page and settlement. */
@Module({
  imports: [TokensModule],
  controllers: [FormulasController, ConnectionsController, TransactionsController, ApprovalsController],
  providers: [ProcessorRegistry, ConnectionsService, TransactionsService, SettlementService],
})
export class OrchestrationModule {}
