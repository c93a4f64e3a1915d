import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { KeyRecords } from '../../../common/crypto/key-records';
import { TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { Clock } from '../../../common/jobs/clock';
import type { Change } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { reseal } from '../data/seal-data';
import {
  DataKeyRotationRepository,
  FIRST,
  type StaleSealed,
  type TokenCursor,
} from './data-key-rotation.repository';

/** What `vault keys rotate --tenant-keys` did. */
export interface DataKeysRotated {
  run: string;
  /** False when it went on with a run an earlier one left unfinished (no new generation then). */
  resumed: boolean;
  /** Tenants given a new generation of their data key. */
  tenants: number;
  /** Tokens and CVCs sealed again by this command. */
  tokens: number;
  cvcs: number;
  /** Generations no token used any more, destroyed at the start. */
  retired: number;
}

/** A run in progress (`vault keys status`): tokens under their tenant's last generation, of all. */
export interface DataKeyRotationStatus {
  done: number;
  total: number;
  cvcs_pending: number;
}

/**
 * `vault keys rotate --tenant-keys`: every tenant's data key gets a new generation (one change, with the
 * run's row), then every token and CVC sealed under an older one is opened and sealed again under it, in
 * committed batches of rows read in primary key order and locked while they are rewritten (rows another
 * change holds are skipped, so writes and reads go on; a read opens whichever generation a row names).
 * Passes are made until one finds nothing left, which also catches a token written by an instance that
 * had not yet heard of the new generation. A crash loses at most the batch in flight: the next run finds
 * the unfinished one and goes on with it. The generations left unused are destroyed when the next run
 * starts.
 */
@Injectable()
export class DataKeyRotation {
  constructor(
    private readonly work: UnitOfWork,
    private readonly repository: DataKeyRotationRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly records: KeyRecords,
    private readonly clock: Clock,
  ) {}

  async run(batch: number, progress: (done: number, total: number) => void): Promise<DataKeysRotated> {
    const begun = await this.records.transaction(async (change, record) => {
      await this.repository.lock(change);
      const running = await this.repository.running(change);
      if (running) {
        record(null, 'update', `Data key rotation ${running} resumed`);
        return { run: running, resumed: true, tenants: 0, retired: 0 };
      }
      const retired = await this.repository.retireUnused(change);
      const run = randomUUID();
      await this.repository.start(change, run, this.clock.now());
      const tenants = await this.tenantKeys.makeDataKeys(change);
      record(
        null,
        'create',
        `Data key rotation ${run} started: a new data key for ${tenants} tenants; ${retired} earlier data keys no token used were destroyed`,
      );
      return { run, resumed: false, tenants, retired };
    });
    // Cached keys read while the change was open would not know the new generations.
    this.tenantKeys.forget();
    const { stale: total } = await this.work.transaction({}, (change) => this.repository.progress(change));
    let tokens = 0;
    let inPass = 0;
    let cursor: TokenCursor = FIRST;
    for (;;) {
      const rows = await this.work.transaction({}, async (change) => {
        const stale = await this.repository.lockStaleTokens(change, cursor, batch);
        await this.repository.replace(change, await this.sealAgain(change, stale, 'data'), 'tokens');
        return stale;
      });
      tokens += rows.length;
      inPass += rows.length;
      if (rows.length) {
        const last = rows[rows.length - 1];
        cursor = { tenantId: last.tenant_id, id: last.id };
        progress(tokens, Math.max(total, tokens));
      }
      if (rows.length === batch) continue;
      // A pass over: another from the first token, until one finds nothing.
      if (inPass === 0) break;
      [cursor, inPass] = [FIRST, 0];
    }
    let cvcs = 0;
    for (;;) {
      const moved = await this.work.transaction({}, async (change) => {
        const stale = await this.repository.lockStaleCvcs(change, batch);
        await this.repository.replace(change, await this.sealAgain(change, stale, 'cvc'), 'token_cvcs');
        return stale.length;
      });
      cvcs += moved;
      if (moved === 0) break;
    }
    await this.records.transaction(async (change, record) => {
      await this.repository.finish(change, begun.run, this.clock.now());
      record(
        null,
        'update',
        `Data key rotation ${begun.run} finished: ${tokens} tokens and ${cvcs} CVCs sealed again under their tenant's new data key`,
      );
    });
    return { ...begun, tokens, cvcs };
  }

  /** The run in progress, or null. */
  async status(): Promise<DataKeyRotationStatus | null> {
    return this.work.transaction({}, async (change) => {
      if (!(await this.repository.running(change))) return null;
      const { stale, cvcs, tokens } = await this.repository.progress(change);
      return { done: tokens - stale, total: tokens, cvcs_pending: cvcs };
    });
  }

  /** Each row opened and sealed under its tenant's last generation (keys read in the change when not cached). */
  private async sealAgain(change: Change, stale: StaleSealed[], what: 'data' | 'cvc') {
    const byTenant = new Map<string, StaleSealed[]>();
    for (const row of stale) byTenant.set(row.tenant_id, [...(byTenant.get(row.tenant_id) ?? []), row]);
    const sealed = [];
    for (const [tenantId, rows] of byTenant) {
      const keys = await this.tenantKeys.keysWith(
        tenantId,
        rows.flatMap((row) => [row.data_key, row.target]),
        change,
      );
      for (const row of rows)
        sealed.push({
          tenant_id: row.tenant_id,
          id: row.id,
          sealed: reseal(keys, what, row),
          data_key: row.target,
          was: row.data_key,
        });
    }
    return sealed;
  }
}
