import { Module } from '@nestjs/common';
import { BuyersController } from './buyers/buyers.controller';
import { BuyersRepository } from './buyers/buyers.repository';
import { BuyersService } from './buyers/buyers.service';
import { ChargedCards } from './transactions/charged-card';
import { BuyerEntity } from './buyers/entities/buyer.entity';
import { BuyerPaymentMethodEntity } from './buyers/entities/buyer-payment-method.entity';
import { BuyerConnectionTokenEntity } from './buyers/entities/buyer-connection-token.entity';
import { ConnectionTokensRepository } from './buyers/connection-tokens.repository';
import { ConnectionTokensService } from './buyers/connection-tokens.service';
import { DatabaseModule } from '../../database/database.module';
import { ConnectionEntity } from './connections/entities/connection.entity';
import { FlowRuleEntity } from './flows/entities/flow-rule.entity';
import { FlowRulesController } from './flows/flow-rules.controller';
import { FlowEvaluationController } from './transactions/flow-evaluation.controller';
import { FlowRulesRepository } from './flows/flow-rules.repository';
import { FlowRulesService } from './flows/flow-rules.service';
import { TransactionRouting } from './transactions/transaction-routing';
import { AttemptsRepository } from './transactions/attempts.repository';
import { ConnectionBreaker } from './transactions/connection-breaker';
import { AttemptEntity } from './transactions/entities/attempt.entity';
import { RefundEntity } from './transactions/entities/refund.entity';
import { TransactionEntity } from './transactions/entities/transaction.entity';
import { TokensModule } from '../tokens/tokens.module';
import { ApprovalsController } from './approvals/approvals.controller';
import { ApprovalsService } from './approvals/approvals.service';
import { ConnectionsController } from './connections/connections.controller';
import { ConnectionsRepository } from './connections/connections.repository';
import { ConnectionsService } from './connections/connections.service';
import { FormulasController } from './formulas/formulas.controller';
import { AdyenNotificationsController } from './notifications/adyen-notifications.controller';
import { AdyenNotificationsService } from './notifications/adyen-notifications.service';
import { CheckoutNotificationsController } from './notifications/checkout-notifications.controller';
import { CheckoutNotificationsService } from './notifications/checkout-notifications.service';
import { PROCESSOR_PROVIDERS } from './processors/processor.registry';
import { ApprovalLinks } from './transactions/approval-links';
import { RefundsRepository } from './transactions/refunds.repository';
import { SettlementService } from './transactions/settlement.service';
import { TransactionJournal } from './transactions/transaction-journal';
import { TransactionsController } from './transactions/transactions.controller';
import { TransactionsRepository } from './transactions/transactions.repository';
import { TransactionsService } from './transactions/transactions.service';
import { TransactionCreationService } from './transactions/transaction-creation.service';
import { TransactionQueriesService } from './transactions/transaction-queries.service';
import { RelayRefundEntity } from './relay/entities/relay-refund.entity';
import { RelayJournal } from './relay/relay-journal';
import { RelayNotifications } from './relay/relay-notifications';
import { RelayRefundsController } from './relay/relay-refunds.controller';
import { RelayRefundsRepository } from './relay/relay-refunds.repository';
import { RelayRefundsService } from './relay/relay-refunds.service';
import { RelaySettlementService } from './relay/relay-settlement.service';

/** Payment orchestration: formulas, connections, routing rules, buyers and their stored cards, transactions, relay refunds, the approval page and settlement. */
@Module({
  imports: [
    DatabaseModule.forFeature([
      ConnectionEntity,
      TransactionEntity,
      RefundEntity,
      FlowRuleEntity,
      AttemptEntity,
      BuyerEntity,
      BuyerPaymentMethodEntity,
      BuyerConnectionTokenEntity,
      RelayRefundEntity,
    ]),
    TokensModule,
  ],
  controllers: [
    FormulasController,
    ConnectionsController,
    TransactionsController,
    FlowRulesController,
    FlowEvaluationController,
    BuyersController,
    ApprovalsController,
    AdyenNotificationsController,
    CheckoutNotificationsController,
    RelayRefundsController,
  ],
  providers: [
    ...PROCESSOR_PROVIDERS,
    ConnectionsRepository,
    TransactionsRepository,
    RefundsRepository,
    TransactionJournal,
    ApprovalLinks,
    ConnectionsService,
    TransactionsService,
    TransactionCreationService,
    TransactionQueriesService,
    FlowRulesRepository,
    FlowRulesService,
    TransactionRouting,
    AttemptsRepository,
    ConnectionBreaker,
    BuyersRepository,
    BuyersService,
    ConnectionTokensRepository,
    ConnectionTokensService,
    ChargedCards,
    ApprovalsService,
    SettlementService,
    AdyenNotificationsService,
    CheckoutNotificationsService,
    RelayRefundsRepository,
    RelayJournal,
    RelayNotifications,
    RelayRefundsService,
    RelaySettlementService,
  ],
  // Card imports store cards for buyers and record processors' tokens on them (docs/migration.md).
  exports: [BuyersService, ConnectionTokensService],
})
export class OrchestrationModule {}
