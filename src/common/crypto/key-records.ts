import { Injectable, Logger } from '@nestjs/common';
import type { Operation } from '../audit/audit.types';
import { SYSTEM_ACTOR } from '../audit/system-tenant';
import type { Change } from '../unit-of-work/change';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { TenantKeyStore } from './tenant-key.store';

/** Adds one row to the system tenant's log, in the change it was handed (a key version, or none). */
export type RecordKeyEvent = (keyVersion: string | null, operation: Operation, message: string) => void;

/**
 * Every use of the key-encrypting keys on record (docs/keys.md): rows of the system tenant's log, in the
 * same transparency tree and checkpoints as every tenant's. Messages name versions, share indexes, counts
 * and PKCS#11 return values, never a share, a key or a PIN.
 */
@Injectable()
export class KeyRecords {
  private readonly logger = new Logger('KeyRecords');

  constructor(
    private readonly work: UnitOfWork,
    private readonly store: TenantKeyStore,
  ) {}

  /** Runs `run` in a change of the system tenant's: what it records commits with what it changes. */
  transaction<T>(run: (change: Change, record: RecordKeyEvent) => Promise<T>): Promise<T> {
    return this.work.transaction({ actor: SYSTEM_ACTOR }, async (change) => {
      await this.store.ensureSystemTenant(change);
      return run(change, (keyVersion, operation, message) =>
        change.audit({ entityType: 'key', entityId: keyVersion, operation, message }),
      );
    });
  }

  /**
   * One row in a change of its own, for what changes nothing in the database (a share entered, the HSM
   * not answering). A failure to record is logged, not thrown: the event it records has happened.
   */
  async note(keyVersion: string | null, operation: Operation, message: string): Promise<void> {
    try {
      await this.transaction(async (_change, record) => record(keyVersion, operation, message));
    } catch (error) {
      this.logger.error(`could not record "${message}" in the system log: ${(error as Error).message}`);
    }
  }
}
