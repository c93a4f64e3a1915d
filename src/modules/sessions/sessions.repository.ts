import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AccessRule } from '../../common/auth/access-rule';
import type { Change } from '../../common/unit-of-work/change';
import { GenerateSql } from '../../database/generate-sql';
import {
  type ColumnOf,
  columnsOf,
  insertOf,
  type RowOf,
  queryRows,
  affectedRows,
} from '../../database/table';
import { SessionEntity } from './entities/session.entity';

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_APPLICATION = '00000000-0000-4000-8000-000000000002';
const EXAMPLE_SESSION = '00000000-0000-4000-8000-000000000003';
const EXAMPLE_DIGEST = Buffer.alloc(32, 7);
const EXAMPLE_NOW = new Date('2026-01-01T00:00:00.000Z');

export interface NewSession {
  id: string;
  tenantId: string;
  applicationId: string;
  keyHash: Buffer;
  nonceHash: Buffer;
  expiresAt: Date;
  createdAt: Date;
}

/** A session that a nonce can still authorize. */
export interface PendingSession {
  id: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface SessionGrant {
  permissions: string[];
  rules: AccessRule[];
  authorizedBy: string;
  authorizedAt: Date;
  expiresAt: Date;
}

/** A session found by its key, with the authorizing application's grants as they are now. */
export interface SessionByKey {
  id: string;
  keyHash: Buffer;
  tenantId: string;
  applicationId: string;
  permissions: string[];
  rules: AccessRule[];
  authorizedAt: Date | null;
  expiresAt: Date;
  /** Null before authorization, or when the authorizing application is gone. */
  holderPermissions: string[] | null;
  holderRules: AccessRule[] | null;
}

/** What `findByKeyHash` reads of the session itself. */
const BY_KEY = [
  'id',
  'key_hash',
  'tenant_id',
  'application_id',
  'permissions',
  'rules',
  'authorized_at',
  'expires_at',
] as const satisfies ColumnOf<SessionEntity>[];

type SessionByKeyRow = Pick<RowOf<SessionEntity>, (typeof BY_KEY)[number]> & {
  holder_permissions: RowOf<SessionEntity>['permissions'] | null;
  holder_rules: RowOf<SessionEntity>['rules'] | null;
};

/** What `lockPendingByNonce` reads. */
const PENDING = ['id', 'created_at', 'expires_at'] as const satisfies ColumnOf<SessionEntity>[];

/**
 * The `sessions` table. Writes and the lock of an authorization run in the change they are given; the
 * lookup of a session key (authentication, before any change) reads through the pool.
 */
@Injectable()
export class SessionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({
    change: true,
    params: [
      {
        id: EXAMPLE_SESSION,
        tenantId: EXAMPLE_TENANT,
        applicationId: EXAMPLE_APPLICATION,
        keyHash: EXAMPLE_DIGEST,
        nonceHash: Buffer.alloc(32, 8),
        expiresAt: new Date('2026-01-01T00:03:00.000Z'),
        createdAt: EXAMPLE_NOW,
      },
    ],
  })
  async insert(change: Change, session: NewSession): Promise<void> {
    const { sql, params } = insertOf(SessionEntity, {
      id: session.id,
      tenant_id: session.tenantId,
      application_id: session.applicationId,
      key_hash: session.keyHash,
      nonce_hash: session.nonceHash,
      expires_at: session.expiresAt,
      created_at: session.createdAt,
    });
    await change.query(sql, params);
  }

  /** The unexpired session of the tenant that still holds this nonce, locked until the change ends. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_DIGEST, EXAMPLE_NOW] })
  async lockPendingByNonce(
    change: Change,
    tenantId: string,
    nonceHash: Buffer,
    now: Date,
  ): Promise<PendingSession | undefined> {
    const rows = await queryRows<Pick<RowOf<SessionEntity>, (typeof PENDING)[number]>>(
      change,
      `SELECT ${columnsOf(SessionEntity, undefined, { only: PENDING })} FROM sessions
        WHERE nonce_hash = $1 AND tenant_id = $2 AND expires_at > $3 FOR UPDATE`,
      [nonceHash, tenantId, now],
    );
    const row = rows[0];
    return row && { id: row.id, createdAt: row.created_at, expiresAt: row.expires_at };
  }

  /** Grants, and consumes the nonce in the same statement. */
  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      EXAMPLE_SESSION,
      {
        permissions: ['token:read'],
        rules: [],
        authorizedBy: EXAMPLE_APPLICATION,
        authorizedAt: EXAMPLE_NOW,
        expiresAt: new Date('2026-01-01T00:03:00.000Z'),
      },
    ],
  })
  async authorize(change: Change, tenantId: string, id: string, grant: SessionGrant): Promise<void> {
    await change.query(
      `UPDATE sessions
          SET nonce_hash = NULL, permissions = $3, rules = $4, authorized_by = $5, authorized_at = $6,
              expires_at = $7
        WHERE tenant_id = $1 AND id = $2`,
      [
        tenantId,
        id,
        grant.permissions,
        JSON.stringify(grant.rules),
        grant.authorizedBy,
        grant.authorizedAt,
        grant.expiresAt,
      ],
    );
  }

  /**
   * The session holding this key digest, of any tenant (the key is what tells the tenant), with the
   * grants its authorizing application holds now.
   */
  @GenerateSql({ params: [EXAMPLE_DIGEST] })
  async findByKeyHash(keyHash: Buffer): Promise<SessionByKey | undefined> {
    const rows = await queryRows<SessionByKeyRow>(
      this.dataSource,
      `SELECT ${columnsOf(SessionEntity, 's', { only: BY_KEY })}, a.permissions AS holder_permissions, a.rules AS holder_rules
         FROM sessions s LEFT JOIN applications a ON a.id = s.authorized_by AND a.tenant_id = s.tenant_id
        WHERE s.key_hash = $1`,
      [keyHash],
    );
    const row = rows[0];
    return (
      row && {
        id: row.id,
        keyHash: row.key_hash,
        tenantId: row.tenant_id,
        applicationId: row.application_id,
        permissions: row.permissions,
        rules: row.rules,
        authorizedAt: row.authorized_at,
        expiresAt: row.expires_at,
        holderPermissions: row.holder_permissions,
        holderRules: row.holder_rules,
      }
    );
  }

  /** Deletes the sessions of every tenant that expired by `now`: one set-based statement. */
  @GenerateSql({ change: true, params: [EXAMPLE_NOW] })
  async deleteExpired(change: Change, now: Date): Promise<number> {
    const count = await affectedRows(change, 'DELETE FROM sessions WHERE expires_at <= $1', [now]);
    return count;
  }
}
