import { Injectable, Logger } from '@nestjs/common';
import { systemOrigin } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { fromReconciliationId, toReconciliationId } from '../processors/reconciliation';
import { RelayJournal } from './relay-journal';
import { RelayRefundRow, RelayRefundsRepository } from './relay-refunds.repository';

/** A relay refund a vendor's notification is about, with the connection that verifies the notification. */
export interface RelayTarget {
  relay: RelayRefundRow;
  connection: UsableConnection;
}

/**
 * A relay refund's merchant reference, as the adapters write a refund's (`<reference>.<key>`): both are
 * the relay refund's id in reconciliation form (RelayJournal.request), so the two parts are the same.
 */
const REFERENCE = /^([0-9A-Za-z]{1,22})\.([0-9A-Za-z]{1,22})$/;

/**
 * What the vendors' notification services (Adyen's, Checkout.com's) do with a notification about a relay
 * refund: find it by its merchant reference (across tenants: a reference names no tenant) with its
 * connection, whose secret the service then verifies the notification with, and settle it once. As for
 * a transaction's refund, a notification sent again finds it settled and changes nothing, and one that
 * reverses a success is only logged and audited.
 */
@Injectable()
export class RelayNotifications {
  private readonly logger = new Logger('RelayNotifications');

  constructor(
    private readonly refunds: RelayRefundsRepository,
    private readonly journal: RelayJournal,
    private readonly connections: ConnectionsService,
    private readonly work: UnitOfWork,
  ) {}

  /** The relay refund `reference` names at a vendor connection (`test` or `live`) of `formulaId`, if any. */
  async find(reference: unknown, formulaId: string): Promise<RelayTarget | undefined> {
    const match = REFERENCE.exec(typeof reference === 'string' ? reference : '');
    if (!match || match[1] !== match[2]) return undefined;
    let id: string;
    try {
      id = fromReconciliationId(match[1]);
    } catch {
      return undefined;
    }
    if (toReconciliationId(id) !== match[1]) return undefined;
    const relay = await this.refunds.findForNotification(id);
    if (!relay) return undefined;
    const connection = await this.connections.loadForPayment(relay.tenant_id, relay.connection_id, true);
    if (!connection || connection.row.formulaId !== formulaId || connection.row.environment === 'sandbox')
      return undefined;
    return { relay, connection };
  }

  /** Settles the relay refund from a verified notification (`by` says which, for its audit row). */
  async settle(
    target: RelayTarget,
    succeeded: boolean,
    vendorRefundId: string | null,
    by: string,
  ): Promise<void> {
    const { relay } = target;
    if (relay.status !== 'processing') {
      if (relay.status === 'succeeded' && !succeeded) {
        const message = `${by}: the vendor reported the refund failed after it succeeded`;
        this.logger.error({ relay_refund_id: relay.id }, message);
        await this.work.transaction(systemOrigin(relay.tenant_id), (change) => {
          this.journal.note(change, relay.id, message);
          return Promise.resolve();
        });
      }
      return;
    }
    await this.work.transaction(systemOrigin(relay.tenant_id), (change) =>
      this.journal.settle(
        change,
        relay,
        {
          status: succeeded ? 'succeeded' : 'failed',
          vendorRefundId,
          errorCode: succeeded ? null : 'refund_failed',
        },
        by,
      ),
    );
  }
}
