import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { LOCK_KEYS } from '../../database/data-source';

/** The check value recorded for a master key version the first time a process used it. */
export interface MasterKeyCheck {
  version: string;
  checkValue: Buffer;
}

/** `master_key_checks`, under the lock that lets instances starting together record once; joins the caller's transaction. */
@Injectable()
export class MasterKeyChecksRepository {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** `pg_advisory_xact_lock` of the checks, held until the transaction ends. */
  async lock(): Promise<void> {
    await this.db.tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.masterKeyChecks]);
  }

  async all(): Promise<MasterKeyCheck[]> {
    const rows: { version: string; check_value: Buffer }[] = await this.db.tx.query(
      'SELECT version, check_value FROM master_key_checks',
    );
    return rows.map((row) => ({ version: row.version, checkValue: row.check_value }));
  }

  /** Records a version's check value unless one is recorded already. */
  async record(check: MasterKeyCheck): Promise<void> {
    await this.db.tx.query(
      `INSERT INTO master_key_checks (version, check_value, created_at) VALUES ($1, $2, now())
       ON CONFLICT (version) DO NOTHING`,
      [check.version, check.checkValue],
    );
  }
}
