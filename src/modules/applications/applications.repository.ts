import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AccessRule } from '../../common/auth/access-rule';
import type { ApplicationType } from '../../common/auth/permissions';
import type { Change, Queryable } from '../../common/unit-of-work/change';
import { GenerateSql } from '../../database/generate-sql';
import { SqlParams } from '../../database/sql';
import {
  assignmentsOf,
  columnsOf,
  entitiesOf,
  insertEntity,
  insertOf,
  type RowOf,
  queryRows,
  select,
} from '../../database/table';
import { ApiKeyEntity } from './entities/api-key.entity';
import { ApplicationEntity } from './entities/application.entity';

export interface ApplicationFilter {
  tenantId: string;
  types?: ApplicationType[];
  ids?: string[];
}

/** Where a page starts: after an application (a cursor), or after skipping `skip` rows. */
export type PageStart = { afterId: string } | { skip: number };

export interface ApplicationChanges {
  name: string;
  permissions: string[];
  rules: AccessRule[] | null;
  allowedOrigins: string[] | null;
  modifiedBy: string;
  modifiedAt: Date;
}

/** An application key found by its digest, with what its application holds. */
export interface KeyHolder {
  keyId: string;
  keyHash: Buffer;
  applicationId: string;
  tenantId: string;
  type: ApplicationType;
  permissions: string[];
  rules: AccessRule[] | null;
}

/** The key's columns (its id as `key_id`) and its application's (its id as `application_id`). */
type KeyHolderRow = { key_id: RowOf<ApiKeyEntity>['id'] } & Pick<RowOf<ApiKeyEntity>, 'key_hash'> & {
    application_id: RowOf<ApplicationEntity>['id'];
  } & Pick<RowOf<ApplicationEntity>, 'tenant_id' | 'type' | 'permissions' | 'rules'>;

/** A key as the application object lists it (never its digest). */
export type KeySummary = Pick<ApiKeyEntity, 'id' | 'createdBy' | 'createdAt'>;

const SUMMARY = ['id', 'created_by', 'created_at'] as const;

type KeySummaryRow = Pick<RowOf<ApiKeyEntity>, (typeof SUMMARY)[number]>;

const KEY_SUMMARY = columnsOf(ApiKeyEntity, undefined, { only: SUMMARY });

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_APPLICATION = '00000000-0000-4000-8000-000000000002';
const EXAMPLE_KEY = '00000000-0000-4000-8000-000000000003';
const EXAMPLE_AT = new Date('2026-01-01T00:00:00.000Z');
const EXAMPLE_APP: ApplicationEntity = {
  tenantId: EXAMPLE_TENANT,
  id: EXAMPLE_APPLICATION,
  name: 'Checkout',
  type: 'private',
  permissions: ['token:create'],
  rules: null,
  allowedOrigins: null,
  createdBy: EXAMPLE_APPLICATION,
  createdAt: EXAMPLE_AT,
  modifiedBy: null,
  modifiedAt: null,
};
const EXAMPLE_API_KEY: ApiKeyEntity = {
  id: EXAMPLE_KEY,
  tenantId: EXAMPLE_TENANT,
  applicationId: EXAMPLE_APPLICATION,
  keyHash: Buffer.alloc(32, 7),
  createdBy: EXAMPLE_APPLICATION,
  createdAt: EXAMPLE_AT,
};

/** Applications and keys as the services use them: every column, under its property. */
const APPLICATION = entitiesOf(ApplicationEntity);
const API_KEY = entitiesOf(ApiKeyEntity);

const keySummary = (row: KeySummaryRow): KeySummary => ({
  id: row.id,
  createdBy: row.created_by,
  createdAt: row.created_at,
});

/**
 * Applications and their keys (`applications`, `api_keys`). Writes, locks and the reads a write decides
 * on run in the change they are given; reads outside any change (GET, key lookups) through the pool.
 */
@Injectable()
export class ApplicationsRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({ change: true, params: [EXAMPLE_APP] })
  async insert(change: Change, app: ApplicationEntity): Promise<void> {
    const { sql, params } = insertEntity(ApplicationEntity, app);
    await change.query(sql, params);
  }

  /**
   * The allowed origins of a public application, by id alone (the card elements' frame names no tenant);
   * undefined when no public application has this id.
   */
  @GenerateSql({ params: [EXAMPLE_APPLICATION] })
  async allowedOriginsOf(id: string): Promise<string[] | undefined> {
    const [app] = await select(
      this.dataSource,
      entitiesOf(ApplicationEntity, { only: ['allowed_origins'] }),
      (columns) => `SELECT ${columns} FROM applications WHERE id = $1 AND type = 'public'`,
      [id],
    );
    return app ? (app.allowedOrigins ?? []) : undefined;
  }

  /** A tenant's application. */
  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_APPLICATION] })
  async findOne(tenantId: string, id: string): Promise<ApplicationEntity | null> {
    const [app] = await select(
      this.dataSource,
      APPLICATION,
      (columns) => `SELECT ${columns} FROM applications WHERE tenant_id = $1 AND id = $2 LIMIT 1`,
      [tenantId, id],
    );
    return app ?? null;
  }

  /** A tenant's application, locked until the change ends. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_APPLICATION] })
  async lockOne(change: Change, tenantId: string, id: string): Promise<ApplicationEntity | null> {
    const [app] = await select(
      change,
      APPLICATION,
      (columns) => `SELECT ${columns} FROM applications WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
      [tenantId, id],
    );
    return app ?? null;
  }

  /** Up to `take` applications oldest first from `start`, and how many match the filter in all. */
  @GenerateSql(
    { name: 'skip', params: [{ tenantId: EXAMPLE_TENANT }, { skip: 0 }, 20], answers: [[{ total: 0 }]] },
    {
      name: 'after',
      params: [
        { tenantId: EXAMPLE_TENANT, types: ['private'], ids: [EXAMPLE_APPLICATION] },
        { afterId: EXAMPLE_APPLICATION },
        20,
      ],
      answers: [[{ total: 0 }]],
    },
  )
  async page(
    filter: ApplicationFilter,
    start: PageStart,
    take: number,
  ): Promise<{ total: number; rows: ApplicationEntity[] }> {
    const p = new SqlParams();
    const tenant = p.add(filter.tenantId);
    const where = [`a.tenant_id = ${tenant}`];
    if (filter.types) where.push(`a.type = ANY(${p.add(filter.types)}::varchar[])`);
    if (filter.ids) where.push(`a.id = ANY(${p.add(filter.ids)}::uuid[])`);
    const [{ total }] = await queryRows<{ total: number }>(
      this.dataSource,
      `SELECT count(*)::int AS total FROM applications a WHERE ${where.join(' AND ')}`,
      [...p.values],
    );
    if ('afterId' in start)
      where.push(`(a.created_at, a.id) > (SELECT b.created_at, b.id FROM applications b
          WHERE b.id = ${p.add(start.afterId)} AND b.tenant_id = ${tenant})`);
    const offset = 'skip' in start ? ` OFFSET ${p.add(start.skip)}` : '';
    const found = await select(
      this.dataSource,
      entitiesOf(ApplicationEntity, { alias: 'a' }),
      (columns) => `SELECT ${columns} FROM applications a WHERE ${where.join(' AND ')}
        ORDER BY a.created_at ASC, a.id ASC${offset} LIMIT ${p.add(take)}`,
      p.values,
    );
    return { total, rows: found };
  }

  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      EXAMPLE_APPLICATION,
      {
        name: 'Checkout',
        permissions: ['token:create'],
        rules: null,
        allowedOrigins: null,
        modifiedBy: EXAMPLE_APPLICATION,
        modifiedAt: EXAMPLE_AT,
      },
    ],
  })
  async update(change: Change, tenantId: string, id: string, changes: ApplicationChanges): Promise<void> {
    const p = new SqlParams();
    const where = `tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)}`;
    await change.query(
      `UPDATE applications SET ${assignmentsOf(ApplicationEntity, p, changes)} WHERE ${where}`,
      p.values,
    );
  }

  /** Deletes an application with its keys (and, by cascade, its sessions); answers the keys it had. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_APPLICATION] })
  async delete(change: Change, tenantId: string, id: string): Promise<KeySummary[]> {
    const rows = await queryRows<KeySummaryRow>(
      change,
      `WITH app AS (DELETE FROM applications WHERE tenant_id = $1 AND id = $2),
            keys AS (DELETE FROM api_keys WHERE tenant_id = $1 AND application_id = $2 RETURNING ${KEY_SUMMARY})
       SELECT ${KEY_SUMMARY} FROM keys ORDER BY created_at, id`,
      [tenantId, id],
    );
    return rows.map(keySummary);
  }

  /**
   * Takes the tenant's row lock, so that changes which could leave the tenant without an administrator
   * are serialized. `FOR NO KEY UPDATE`, not `FOR UPDATE`: the latter also blocks the `FOR KEY SHARE`
   * lock that every foreign-key insert (a new key, an audit row) takes on the tenant, and deadlocks with them.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT] })
  async lockTenant(change: Change, tenantId: string): Promise<void> {
    await change.query('SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE', [tenantId]);
  }

  /** How many of the tenant's applications other than `exceptId` hold every one of `permissions` and have a key. */
  @GenerateSql({
    change: true,
    params: [EXAMPLE_TENANT, EXAMPLE_APPLICATION, ['application:create', 'application:update']],
    answers: [[{ others: 1 }]],
  })
  async countOthersHoldingWithKey(
    change: Change,
    tenantId: string,
    exceptId: string,
    permissions: string[],
  ): Promise<number> {
    const [{ others }] = await queryRows<{ others: number }>(
      change,
      `SELECT count(*)::int AS others FROM applications a
        WHERE a.tenant_id = $1 AND a.id <> $2 AND a.permissions @> $3::text[]
          AND EXISTS (SELECT 1 FROM api_keys k WHERE k.tenant_id = a.tenant_id AND k.application_id = a.id)`,
      [tenantId, exceptId, permissions],
    );
    return others;
  }

  @GenerateSql({ change: true, params: [EXAMPLE_API_KEY] })
  async insertKey(change: Change, key: ApiKeyEntity): Promise<void> {
    const { sql, params } = insertEntity(ApiKeyEntity, key);
    await change.query(sql, params);
  }

  /** Adds a key to its application; answers every key the application then has, oldest first. */
  @GenerateSql({
    change: true,
    params: [
      {
        id: EXAMPLE_KEY,
        tenantId: EXAMPLE_TENANT,
        applicationId: EXAMPLE_APPLICATION,
        keyHash: Buffer.alloc(32, 7),
        createdBy: EXAMPLE_APPLICATION,
        createdAt: new Date('2026-01-01T00:00:00.000Z'),
      },
    ],
  })
  async insertKeyListingKeys(change: Change, key: ApiKeyEntity): Promise<KeySummary[]> {
    // Parameters in this order: the SELECT below reads the tenant as $1 and the application as $3.
    const { sql, params } = insertOf(ApiKeyEntity, {
      tenant_id: key.tenantId,
      id: key.id,
      application_id: key.applicationId,
      key_hash: key.keyHash,
      created_by: key.createdBy,
      created_at: key.createdAt,
    });
    const rows = await queryRows<KeySummaryRow>(
      change,
      `WITH added AS (${sql} RETURNING ${KEY_SUMMARY})
       SELECT ${KEY_SUMMARY} FROM api_keys WHERE tenant_id = $1 AND application_id = $3
       UNION ALL SELECT ${KEY_SUMMARY} FROM added
       ORDER BY created_at, id`,
      params,
    );
    return rows.map(keySummary);
  }

  /** The keys of these applications of the tenant, oldest first. */
  @GenerateSql({ params: [EXAMPLE_TENANT, [EXAMPLE_APPLICATION]] })
  keysOf(tenantId: string, applicationIds: string[]): Promise<ApiKeyEntity[]> {
    return this.findKeys(this.dataSource, tenantId, applicationIds);
  }

  /** `keysOf`, read in the change (under its locks). */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, [EXAMPLE_APPLICATION]] })
  keysIn(change: Change, tenantId: string, applicationIds: string[]): Promise<ApiKeyEntity[]> {
    return this.findKeys(change, tenantId, applicationIds);
  }

  private findKeys(
    db: Pick<Queryable, 'query'>,
    tenantId: string,
    applicationIds: string[],
  ): Promise<ApiKeyEntity[]> {
    return select(
      db,
      API_KEY,
      (columns) => `SELECT ${columns} FROM api_keys WHERE tenant_id = $1 AND application_id = ANY($2::uuid[])
        ORDER BY created_at ASC`,
      [tenantId, applicationIds],
    );
  }

  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_APPLICATION, EXAMPLE_KEY] })
  async findKey(tenantId: string, applicationId: string, id: string): Promise<ApiKeyEntity | null> {
    const [key] = await select(
      this.dataSource,
      API_KEY,
      (columns) =>
        `SELECT ${columns} FROM api_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3 LIMIT 1`,
      [tenantId, applicationId, id],
    );
    return key ?? null;
  }

  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_APPLICATION, EXAMPLE_KEY] })
  async deleteKey(change: Change, tenantId: string, applicationId: string, id: string): Promise<void> {
    await change.query('DELETE FROM api_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3', [
      tenantId,
      applicationId,
      id,
    ]);
  }

  /** The key with this digest and its application, of any tenant: the key is what tells the tenant. */
  @GenerateSql({ params: [Buffer.alloc(32, 7)] })
  async findKeyHolder(keyHash: Buffer): Promise<KeyHolder | undefined> {
    const rows = await queryRows<KeyHolderRow>(
      this.dataSource,
      `SELECT k.id AS key_id, k.key_hash, a.id AS application_id, a.tenant_id, a.type, a.permissions, a.rules
         FROM api_keys k JOIN applications a ON a.id = k.application_id AND a.tenant_id = k.tenant_id
        WHERE k.key_hash = $1`,
      [keyHash],
    );
    const row = rows[0];
    return (
      row && {
        keyId: row.key_id,
        keyHash: row.key_hash,
        applicationId: row.application_id,
        tenantId: row.tenant_id,
        type: row.type,
        permissions: row.permissions,
        rules: row.rules,
      }
    );
  }
}
