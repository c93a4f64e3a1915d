import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';

export interface ConnectionRow {
  id: string;
  tenant_id: string;
  formula_id: string;
  method: string;
  display_name: string;
  /** Every field in the order given; secret fields with a null value (their values are in `secrets`). */
  fields: ConnectionField[];
  secrets: Buffer | null;
  accepted_countries: string[];
  accepted_currencies: string[];
  active: boolean;
  status: 'pending' | 'available' | 'failed';
  three_d_secure_enabled: boolean;
  version: number;
  deleted_at: Date | null;
}

export interface ConnectionField {
  key: string;
  value: string | null;
}

/** What a create or an update writes: the request checked against its formula, secrets sealed. */
export interface ConnectionValues {
  formulaId: string;
  method: string;
  displayName: string;
  fields: ConnectionField[];
  secrets: Buffer | null;
  acceptedCountries: string[];
  acceptedCurrencies: string[];
  active: boolean;
  threeDSecureEnabled: boolean;
}

const valuesOf = (v: ConnectionValues): unknown[] => [
  v.formulaId,
  v.method,
  v.displayName,
  JSON.stringify(v.fields),
  v.secrets,
  v.acceptedCountries,
  v.acceptedCurrencies,
  v.active,
  v.threeDSecureEnabled,
];

/** Connections to payment vendors: every statement on the `connections` table. */
@Injectable()
export class ConnectionsRepository {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** A new connection, `pending` until its credentials are verified. */
  async insert(
    tenantId: string,
    id: string,
    values: ConnectionValues,
    createdBy: string | null,
    now: Date,
  ): Promise<ConnectionRow> {
    const rows: ConnectionRow[] = await this.db.tx.query(
      `INSERT INTO connections (id, tenant_id, formula_id, method, display_name, fields, secrets, accepted_countries,
                                accepted_currencies, active, three_d_secure_enabled, status, created_by, created_at,
                                updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, $13)
       RETURNING *`,
      [id, tenantId, ...valuesOf(values), createdBy, now],
    );
    return rows[0];
  }

  /** Replaces a connection's values; it is `pending` again and its version moves on. */
  async update(tenantId: string, id: string, values: ConnectionValues, now: Date): Promise<ConnectionRow> {
    const [rows]: [ConnectionRow[], number] = await this.db.tx.query(
      `UPDATE connections
          SET formula_id = $3, method = $4, display_name = $5, fields = $6, secrets = $7, accepted_countries = $8,
              accepted_currencies = $9, active = $10, three_d_secure_enabled = $11, status = 'pending',
              status_reason = NULL, version = version + 1, updated_at = $12
        WHERE tenant_id = $1 AND id = $2
        RETURNING *`,
      [tenantId, id, ...valuesOf(values), now],
    );
    return rows[0];
  }

  /** The tenant's connections that are not deleted, oldest first. */
  async list(tenantId: string): Promise<ConnectionRow[]> {
    return this.db.tx.query(
      `SELECT * FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`,
      [tenantId],
    );
  }

  /**
   * One connection of the tenant; deleted ones only with `includeDeleted` (transactions keep using
   * theirs); `lock` holds it until the current transaction ends.
   */
  async find(
    tenantId: string,
    id: string,
    options: { includeDeleted?: boolean; lock?: boolean } = {},
  ): Promise<ConnectionRow | undefined> {
    const rows: ConnectionRow[] = await this.db.tx.query(
      `SELECT * FROM connections WHERE tenant_id = $1 AND id = $2${options.includeDeleted ? '' : ' AND deleted_at IS NULL'}${options.lock ? ' FOR UPDATE' : ''}`,
      [tenantId, id],
    );
    return rows[0];
  }

  /** Marks a connection deleted and inactive, keeping the row for the transactions that refer to it. */
  async softDelete(tenantId: string, id: string, now: Date): Promise<void> {
    await this.db.tx.query(
      'UPDATE connections SET deleted_at = $3, active = false WHERE tenant_id = $1 AND id = $2',
      [tenantId, id, now],
    );
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.tx.query('DELETE FROM connections WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  }

  /** Connections waiting for verification, across tenants (for the verification sweep). */
  async findPending(limit: number): Promise<Pick<ConnectionRow, 'tenant_id' | 'id'>[]> {
    return this.db.tx.query(
      `SELECT tenant_id, id FROM connections WHERE status = 'pending' AND deleted_at IS NULL ORDER BY updated_at LIMIT $1`,
      [limit],
    );
  }

  /** A connection still waiting for verification. */
  async findPendingOne(tenantId: string, id: string): Promise<ConnectionRow | undefined> {
    const rows: ConnectionRow[] = await this.db.tx.query(
      `SELECT * FROM connections WHERE tenant_id = $1 AND id = $2 AND status = 'pending' AND deleted_at IS NULL`,
      [tenantId, id],
    );
    return rows[0];
  }

  /** Records a verification, only if the connection is still the version that was verified. */
  async recordVerification(
    row: Pick<ConnectionRow, 'tenant_id' | 'id' | 'version'>,
    outcome: { status: 'available' | 'failed'; reason: string | null },
  ): Promise<void> {
    await this.db.tx.query(
      `UPDATE connections SET status = $4, status_reason = $5
        WHERE tenant_id = $1 AND id = $2 AND version = $3 AND status = 'pending'`,
      [row.tenant_id, row.id, row.version, outcome.status, outcome.reason],
    );
  }
}
