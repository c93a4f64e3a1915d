import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { Clock } from '../../../common/jobs/clock';
import { ExclusiveJobRunner } from '../../../common/jobs/exclusive';
import { systemOrigin } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { AppConfig } from '../../../config/app-config';
import { LOCK_KEYS } from '../../../database/data-source';
import { ConnectionsService } from '../connections/connections.service';
import { ProcessorRegistry } from '../processors/processor.registry';
import { isFinal } from '../transactions/transaction-state';
import { STUCK_AFTER_MS } from '../transactions/transactions.service';
import { RelayJournal } from './relay-journal';
import { RelayRefundRow, RelayRefundsRepository } from './relay-refunds.repository';
import { outcomeOf } from './relay-refunds.service';

const BATCH = 100;

/**
 * The settlement job's sweep of relay refunds, as the transactions' settlement sweeps their refunds: a
 * relay refund still `processing` a minute after its last change (its request died, or the vendor did
 * not answer) is asked of its vendor (`pollStatus`, operation `refund`, by the relay refund's id), and
 * settled by a conditional update when the vendor has an outcome. At a vendor that confirms by
 * notification (Adyen) it is left to the notification until VENDOR_NOTIFICATION_TIMEOUT_SECONDS. Runs
 * on one instance at a time; no lock is held while a vendor is asked.
 */
@Injectable()
export class RelaySettlementService {
  private readonly logger = new Logger('RelaySettlement');

  constructor(
    private readonly refunds: RelayRefundsRepository,
    private readonly journal: RelayJournal,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly jobs: ExclusiveJobRunner,
    private readonly config: AppConfig,
    private readonly work: UnitOfWork,
  ) {}

  @Interval(1_000)
  async tick(): Promise<void> {
    await this.jobs.runAlone('relay-settlement', LOCK_KEYS.jobRelaySettlement, () => this.settle());
  }

  /**
   * One pass over the relay refunds left `processing` (one tenant's with `tenantId`, as
   * SettlementService.settle); returns how many it settled.
   */
  async settle(tenantId: string | null = null): Promise<number> {
    const now = this.clock.now();
    const notified = {
      formulas: this.processors.notificationFormulas(),
      waitingSince: new Date(now.getTime() - this.config.VENDOR_NOTIFICATION_TIMEOUT_SECONDS * 1000),
    };
    const stuck = await this.refunds.findStuck(
      new Date(now.getTime() - STUCK_AFTER_MS),
      BATCH,
      notified,
      tenantId,
    );
    let moved = 0;
    for (const refund of stuck) {
      if (this.jobs.stopping) return moved;
      try {
        if (await this.settleOne(refund)) moved++;
      } catch (error) {
        this.logger.error({ err: error, relay_refund_id: refund.id }, 'could not settle a relay refund');
      }
    }
    return moved;
  }

  private async settleOne(refund: RelayRefundRow): Promise<boolean> {
    const connection = await this.connections.loadForPayment(refund.tenant_id, refund.connection_id, true);
    if (!connection) return false;
    const result = await this.processors
      .for(connection.row)
      .pollStatus(this.journal.pollRequest(refund, connection));
    if (!isFinal(result)) return false;
    const outcome = outcomeOf(result);
    if (outcome.status === 'failed')
      this.logger.warn(
        { relay_refund_id: refund.id, error_code: outcome.errorCode },
        'settled a relay refund as failed',
      );
    const settled = await this.work.transaction(systemOrigin(refund.tenant_id), (change) =>
      this.journal.settle(change, refund, outcome, 'Settled by asking the vendor'),
    );
    return !!settled;
  }
}
