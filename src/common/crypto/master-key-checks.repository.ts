import { Injectable } from '@nestjs/common';
import { LOCK_KEYS } from '../../database/data-source';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, insertSql, type RowOf, queryRows } from '../../database/table';
import type { KeyProviderName } from './key-encryption-key';
import { MasterKeyCheckEntity } from './entities/master-key-check.entity';
import type { Change } from '../unit-of-work/change';

/**
 * The check value recorded for a master key version the first time a process used it (or its ceremony
 * made it), and who holds it: `env`, `pkcs11`, or `split` with `threshold` of `shares`.
 */
export interface MasterKeyCheck {
  version: string;
  checkValue: Buffer;
  provider?: KeyProviderName;
  threshold?: number | null;
  shares?: number | null;
}

/** What `all` reads. */
const READ = ['version', 'check_value', 'provider', 'threshold', 'shares'] as const;

/** `master_key_checks`, under the lock that lets instances starting together record once; runs in the change it is given. */
@Injectable()
export class MasterKeyChecksRepository {
  /** `pg_advisory_xact_lock` of the checks, held until the change ends. */
  @GenerateSql({ change: true, params: [] })
  async lock(change: Change): Promise<void> {
    await change.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.masterKeyChecks]);
  }

  /** Every version recorded, oldest first. */
  @GenerateSql({ change: true, params: [] })
  async all(change: Change): Promise<MasterKeyCheck[]> {
    const rows = await queryRows<Pick<RowOf<MasterKeyCheckEntity>, (typeof READ)[number]>>(
      change,
      `SELECT ${columnsOf(MasterKeyCheckEntity, undefined, { only: READ })} FROM master_key_checks
        ORDER BY created_at, version`,
    );
    return rows.map((row) => ({
      version: row.version,
      checkValue: row.check_value,
      provider: row.provider,
      threshold: row.threshold,
      shares: row.shares,
    }));
  }

  /** The versions the audit log's signing keys are sealed under (they too need their KEK). */
  @GenerateSql({ change: true, params: [] })
  async signingKeyVersions(change: Change): Promise<string[]> {
    const rows = await queryRows<{ master_key_version: string }>(
      change,
      `SELECT DISTINCT master_key_version FROM audit_signing_keys WHERE master_key_version IS NOT NULL`,
    );
    return rows.map((row) => row.master_key_version);
  }

  /** Records a version's check value (and custody) unless one is recorded already; true when recorded now. */
  @GenerateSql({ change: true, params: [{ version: 'v1', checkValue: Buffer.alloc(32, 7) }] })
  async record(change: Change, check: MasterKeyCheck): Promise<boolean> {
    const rows = await queryRows(
      change,
      `${insertSql(MasterKeyCheckEntity, {
        version: '$1',
        check_value: '$2',
        provider: '$3',
        threshold: '$4',
        shares: '$5',
        created_at: 'clock_timestamp()',
      })}
       ON CONFLICT (version) DO NOTHING RETURNING version`,
      [
        check.version,
        check.checkValue,
        check.provider ?? 'env',
        check.threshold ?? null,
        check.shares ?? null,
      ],
    );
    return rows.length > 0;
  }
}
