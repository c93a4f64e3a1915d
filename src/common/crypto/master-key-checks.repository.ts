import { Injectable } from '@nestjs/common';
import { LOCK_KEYS } from '../../database/data-source';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, insertSql, type RowOf, queryRows } from '../../database/table';
import { MasterKeyCheckEntity } from './entities/master-key-check.entity';
import type { Change } from '../unit-of-work/change';

/** The check value recorded for a master key version the first time a process used it. */
export interface MasterKeyCheck {
  version: string;
  checkValue: Buffer;
}

/** What `all` reads. */
const READ = ['version', 'check_value'] as const;

/** `master_key_checks`, under the lock that lets instances starting together record once; runs in the change it is given. */
@Injectable()
export class MasterKeyChecksRepository {
  /** `pg_advisory_xact_lock` of the checks, held until the change ends. */
  @GenerateSql({ change: true, params: [] })
  async lock(change: Change): Promise<void> {
    await change.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.masterKeyChecks]);
  }

  @GenerateSql({ change: true, params: [] })
  async all(change: Change): Promise<MasterKeyCheck[]> {
    const rows = await queryRows<Pick<RowOf<MasterKeyCheckEntity>, (typeof READ)[number]>>(
      change,
      `SELECT ${columnsOf(MasterKeyCheckEntity, undefined, { only: READ })} FROM master_key_checks`,
    );
    return rows.map((row) => ({ version: row.version, checkValue: row.check_value }));
  }

  /** Records a version's check value unless one is recorded already. */
  @GenerateSql({ change: true, params: [{ version: 'v1', checkValue: Buffer.alloc(32, 7) }] })
  async record(change: Change, check: MasterKeyCheck): Promise<void> {
    await change.query(
      `${insertSql(MasterKeyCheckEntity, { version: '$1', check_value: '$2', created_at: 'now()' })}
       ON CONFLICT (version) DO NOTHING`,
      [check.version, check.checkValue],
    );
  }
}
