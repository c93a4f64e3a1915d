import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, insertOf, type RowOf, queryRows } from '../../database/table';
import type { Change } from '../unit-of-work/change';
import { AuditSigningKeyEntity } from './entities/audit-tree.entity';

export type SigningKeyRow = RowOf<AuditSigningKeyEntity>;

const COLUMNS = columnsOf(AuditSigningKeyEntity);
const EXAMPLE: SigningKeyRow = {
  id: '00000000-0000-4000-8000-000000000003',
  name: 'vault.example.com/audit',
  key_id: '0a0b0c0d',
  public_key: Buffer.alloc(32, 1),
  sealed_seed: Buffer.alloc(60, 2),
  master_key_version: 'v1',
  created_at: new Date('2026-01-01T00:00:00.000Z'),
};

/** The checkpoint signing keys, oldest first. */
@Injectable()
export class AuditSigningKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({ name: 'all', params: [] }, { name: 'allInChange', change: true, params: [] })
  list(change?: Change): Promise<SigningKeyRow[]> {
    const sql = `SELECT ${COLUMNS} FROM audit_signing_keys ORDER BY created_at, id`;
    return queryRows<SigningKeyRow>(change ?? this.dataSource, sql);
  }

  /** Seals a key's seed again, under another master key. */
  @GenerateSql({ change: true, params: [EXAMPLE.id, Buffer.alloc(60, 3), 'v2'] })
  async reseal(change: Change, id: string, sealedSeed: Buffer, masterKeyVersion: string): Promise<void> {
    await change.query(
      'UPDATE audit_signing_keys SET sealed_seed = $2, master_key_version = $3 WHERE id = $1',
      [id, sealedSeed, masterKeyVersion],
    );
  }

  /** Adds a key (under the checkpointer's lock: one instance decides). */
  @GenerateSql({ change: true, params: [EXAMPLE] })
  async insert(change: Change, row: SigningKeyRow): Promise<void> {
    const insert = insertOf(AuditSigningKeyEntity, row);
    await change.query(insert.sql, insert.params);
  }
}
