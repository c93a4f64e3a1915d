import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change, Queryable } from '../../common/unit-of-work/change';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, insertOf, queryRows, recordsetOf, type RowOf } from '../../database/table';
import { TokenImportKeyEntity } from './entities/token-import-key.entity';
import { type ImportStatus, TokenImportEntity } from './entities/token-import.entity';
import { TokenImportResultEntity } from './entities/token-import-result.entity';

export type ImportKeyRow = RowOf<TokenImportKeyEntity>;
export type ImportRow = RowOf<TokenImportEntity>;
export type ImportResultRow = RowOf<TokenImportResultEntity>;

/** What one batch adds to a job's counts. */
export interface BatchCounts {
  imported: number;
  duplicates: number;
  failed: number;
}

const KEY_COLUMNS = columnsOf(TokenImportKeyEntity);
const IMPORT_COLUMNS = columnsOf(TokenImportEntity);
const RESULT_COLUMNS = columnsOf(TokenImportResultEntity);
const RESULT_RECORD = recordsetOf(TokenImportResultEntity);
/** What a page of results shows: every column but the sealed processor token. */
const SHOWN_RESULT = columnsOf(TokenImportResultEntity, undefined, { except: ['connection'] });

const bytea = (value: Buffer | null) => (value ? `\\x${value.toString('hex')}` : null);

/** Examples for the SQL snapshots (`@GenerateSql`). */
const TENANT = '00000000-0000-4000-8000-000000000001';
const IMPORT = '00000000-0000-4000-8000-000000000007';
const AT = new Date('2026-01-02T03:04:05.000Z');
const EXAMPLE_KEY: ImportKeyRow = {
  tenant_id: TENANT,
  fingerprint: '01e1e68840e8f4c72d14787cc1642a6462c50993',
  algorithm: 'ed25519/cv25519',
  public_key: '-----BEGIN PGP PUBLIC KEY BLOCK-----',
  private_key: Buffer.from('sealed'),
  created_at: AT,
};
const EXAMPLE_IMPORT: Partial<ImportRow> = {
  tenant_id: TENANT,
  id: IMPORT,
  status: 'pending',
  format: 'csv',
  file_bytes: '1024',
  created_by: '00000000-0000-4000-8000-000000000002',
  created_at: AT,
};
const EXAMPLE_RESULT: ImportResultRow = {
  tenant_id: TENANT,
  import_id: IMPORT,
  line: 2,
  status: 'imported',
  external_id: 'card-1',
  token_id: '00000000-0000-4000-8000-000000000006',
  error_field: null,
  error_code: null,
  connection: null,
};

/**
 * Import keys, import jobs and their results: every statement on `token_import_keys`, `token_imports`
 * and `token_import_results`. Writes run in the change they are given; reads outside a change on the pool.
 */
@Injectable()
export class ImportsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Stores the tenant's key; undefined when the tenant has one already (that one stays). */
  @GenerateSql({ change: true, params: [EXAMPLE_KEY] })
  async insertKey(change: Change, key: ImportKeyRow): Promise<ImportKeyRow | undefined> {
    const { sql, params } = insertOf(TokenImportKeyEntity, key);
    const [row] = await queryRows<ImportKeyRow>(
      change,
      `${sql} ON CONFLICT (tenant_id) DO NOTHING RETURNING ${KEY_COLUMNS}`,
      params,
    );
    return row;
  }

  @GenerateSql({ params: [TENANT] })
  async findKey(tenantId: string, q: Queryable = this.dataSource): Promise<ImportKeyRow | undefined> {
    const [row] = await queryRows<ImportKeyRow>(
      q,
      `SELECT ${KEY_COLUMNS} FROM token_import_keys WHERE tenant_id = $1`,
      [tenantId],
    );
    return row;
  }

  @GenerateSql({ change: true, params: [EXAMPLE_IMPORT] })
  async insert(change: Change, row: Partial<ImportRow>): Promise<ImportRow> {
    const { sql, params } = insertOf(TokenImportEntity, row);
    const [inserted] = await queryRows<ImportRow>(change, `${sql} RETURNING ${IMPORT_COLUMNS}`, params);
    return inserted;
  }

  @GenerateSql({ params: [TENANT, IMPORT] })
  async find(tenantId: string, id: string, q: Queryable = this.dataSource): Promise<ImportRow | undefined> {
    const [row] = await queryRows<ImportRow>(
      q,
      `SELECT ${IMPORT_COLUMNS} FROM token_imports WHERE tenant_id = $1 AND id = $2`,
      [tenantId, id],
    );
    return row;
  }

  /** The jobs still to run, of every tenant, oldest first (the worker's query). */
  @GenerateSql({ params: [10] })
  unfinished(limit: number): Promise<Pick<ImportRow, 'tenant_id' | 'id'>[]> {
    return queryRows<Pick<ImportRow, 'tenant_id' | 'id'>>(
      this.dataSource,
      `SELECT tenant_id, id FROM token_imports WHERE status IN ('pending', 'processing')
        ORDER BY created_at, id LIMIT $1`,
      [limit],
    );
  }

  /** The job starts (or starts again): `processing`, with its total; false when it is no longer to run. */
  @GenerateSql({ change: true, params: [TENANT, IMPORT, 1000, AT] })
  async start(change: Change, tenantId: string, id: string, total: number, now: Date): Promise<boolean> {
    const rows = await queryRows<Pick<ImportRow, 'id'>>(
      change,
      `UPDATE token_imports SET status = 'processing', total = $3, started_at = coalesce(started_at, $4)
        WHERE tenant_id = $1 AND id = $2 AND status IN ('pending', 'processing') RETURNING id`,
      [tenantId, id, total, now],
    );
    return rows.length > 0;
  }

  /**
   * The checkpoint of one batch, in the transaction of its tokens: lines up to `to` are done and the
   * counts grow, only if the job is still where this batch began (`from`); false otherwise (another run
   * got there first: the caller rolls the batch back).
   */
  @GenerateSql({
    change: true,
    params: [TENANT, IMPORT, 1, 1001, { imported: 990, duplicates: 5, failed: 5 }],
  })
  async checkpoint(
    change: Change,
    tenantId: string,
    id: string,
    from: number,
    to: number,
    counts: BatchCounts,
  ): Promise<boolean> {
    const rows = await queryRows<Pick<ImportRow, 'id'>>(
      change,
      `UPDATE token_imports
          SET lines_done = $4, imported = imported + $5, duplicates = duplicates + $6, failed = failed + $7
        WHERE tenant_id = $1 AND id = $2 AND status = 'processing' AND lines_done = $3 RETURNING id`,
      [tenantId, id, from, to, counts.imported, counts.duplicates, counts.failed],
    );
    return rows.length > 0;
  }

  /** The job ends: `completed`, or `failed` with its code; false when it had ended already. */
  @GenerateSql({ change: true, params: [TENANT, IMPORT, 'failed', 'integrity_check_failed', AT] })
  async finish(
    change: Change,
    tenantId: string,
    id: string,
    status: Extract<ImportStatus, 'completed' | 'failed'>,
    errorCode: string | null,
    now: Date,
  ): Promise<boolean> {
    const rows = await queryRows<Pick<ImportRow, 'id'>>(
      change,
      `UPDATE token_imports SET status = $3, error_code = $4, completed_at = $5
        WHERE tenant_id = $1 AND id = $2 AND status IN ('pending', 'processing') RETURNING id`,
      [tenantId, id, status, errorCode, now],
    );
    return rows.length > 0;
  }

  /** A batch's results, as one statement (the rows travel as one JSON parameter). */
  @GenerateSql({ change: true, params: [[EXAMPLE_RESULT]] })
  async insertResults(change: Change, rows: ImportResultRow[]): Promise<void> {
    if (!rows.length) return;
    const json = JSON.stringify(rows.map((row) => ({ ...row, connection: bytea(row.connection) })));
    await change.query(
      `INSERT INTO token_import_results (${RESULT_COLUMNS})
       SELECT ${RESULT_COLUMNS} FROM jsonb_to_recordset($1::jsonb) AS r(${RESULT_RECORD})`,
      [json],
    );
  }

  /** A page of a job's results in line order, and how many there are in all. */
  @GenerateSql({ params: [TENANT, IMPORT, { skip: 0, take: 20 }], answers: [[], [{ n: 0 }]] })
  async results(
    tenantId: string,
    importId: string,
    page: { skip: number; take: number },
  ): Promise<{ rows: Omit<ImportResultRow, 'connection'>[]; total: number }> {
    const [rows, [{ n }]] = await Promise.all([
      queryRows<Omit<ImportResultRow, 'connection'>>(
        this.dataSource,
        `SELECT ${SHOWN_RESULT} FROM token_import_results WHERE tenant_id = $1 AND import_id = $2
          ORDER BY line LIMIT $3 OFFSET $4`,
        [tenantId, importId, page.take, page.skip],
      ),
      queryRows<{ n: number }>(
        this.dataSource,
        `SELECT count(*)::int AS n FROM token_import_results WHERE tenant_id = $1 AND import_id = $2`,
        [tenantId, importId],
      ),
    ]);
    return { rows, total: n };
  }
}
