import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../common/unit-of-work/change';
import type { ChangeWrites } from '../../common/unit-of-work/write-batch';
import { GenerateSql } from '../../database/generate-sql';
import { affectedRows, entitiesOf, insertEntity, queryRows, select } from '../../database/table';
import { WalletMerchantKeyEntity, type Wallet } from './entities/wallet-merchant-key.entity';
import type { WalletReplayEntity } from './entities/wallet-replay.entity';

/** At most this many active keys per tenant and wallet (the `slot` column's range). */
export const MAX_ACTIVE_KEYS = 5;

const KEY = entitiesOf(WalletMerchantKeyEntity);

/** What a certificate brings to an Apple Pay key as it is activated (or its certificate replaced). */
export interface CertificateChanges {
  certificate: string;
  merchantIdentifier: string;
  notAfter: Date;
}

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_KEY_ID = '00000000-0000-4000-8000-000000000002';
const EXAMPLE_AT = new Date('2026-01-01T00:00:00.000Z');
const EXAMPLE: WalletMerchantKeyEntity = {
  tenantId: EXAMPLE_TENANT,
  id: EXAMPLE_KEY_ID,
  wallet: 'google_pay',
  status: 'active',
  slot: null,
  privateKey: Buffer.alloc(32, 7),
  publicKey: Buffer.alloc(91, 4),
  certificate: null,
  merchantIdentifier: null,
  notAfter: null,
  gatewayMerchantId: 'acme',
  createdBy: EXAMPLE_KEY_ID,
  createdAt: EXAMPLE_AT,
};
const EXAMPLE_CERTIFICATE: CertificateChanges = {
  certificate: '-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n',
  merchantIdentifier: 'ab'.repeat(32),
  notAfter: EXAMPLE_AT,
};

/** The lowest slot of the tenant's wallet no active key holds (NULL when all 5 are held). */
const FREE_SLOT = `(SELECT min(s) FROM generate_series(1, ${MAX_ACTIVE_KEYS}) AS s
   WHERE NOT EXISTS (SELECT 1 FROM wallet_merchant_keys k
                      WHERE k.tenant_id = $1 AND k.wallet = $2 AND k.slot = s))`;

/**
 * Wallet merchant keys and the replay guard's transaction ids. The 5-key limit is the unique slot: an
 * active key takes the lowest free one in the statement that makes it active, and a statement that
 * finds none (or loses its slot to a concurrent one) changes nothing.
 */
@Injectable()
export class WalletsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A pending key (an Apple Pay key waiting for its certificate). */
  @GenerateSql({ change: true, params: [{ ...EXAMPLE, wallet: 'apple_pay', status: 'pending' }] })
  async insertPending(change: Change, key: WalletMerchantKeyEntity): Promise<void> {
    const { sql, params } = insertEntity(WalletMerchantKeyEntity, { ...key, status: 'pending', slot: null });
    await change.query(sql, params);
  }

  /** An active key in the lowest free slot; false when the tenant's wallet has 5 active keys. */
  @GenerateSql({ change: true, params: [EXAMPLE] })
  async insertActive(change: Change, key: WalletMerchantKeyEntity): Promise<boolean> {
    const inserted = await queryRows<{ id: string }>(
      change,
      `INSERT INTO wallet_merchant_keys (tenant_id, wallet, id, status, slot, private_key, public_key,
              gateway_merchant_id, created_by, created_at)
       SELECT $1, $2, $3, 'active', free.slot, $4, $5, $6, $7, $8
         FROM (SELECT ${FREE_SLOT} AS slot) free
        WHERE free.slot IS NOT NULL
       ON CONFLICT DO NOTHING
       RETURNING id`,
      [
        key.tenantId,
        key.wallet,
        key.id,
        key.privateKey,
        key.publicKey,
        key.gatewayMerchantId,
        key.createdBy,
        key.createdAt,
      ],
    );
    return inserted.length === 1;
  }

  /**
   * Gives an Apple Pay key its certificate: a pending one becomes active in the lowest free slot (none
   * free: unchanged), an active one keeps its slot. Answers the key as it then is, or null when it was
   * not changed (no such key, or no free slot).
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_KEY_ID, EXAMPLE_CERTIFICATE] })
  async activate(
    change: Change,
    tenantId: string,
    id: string,
    certificate: CertificateChanges,
  ): Promise<WalletMerchantKeyEntity | null> {
    const [key] = await select(
      change,
      KEY,
      (columns) => `UPDATE wallet_merchant_keys
          SET status = 'active', slot = coalesce(slot, ${FREE_SLOT}),
              certificate = $4, merchant_identifier = $5, not_after = $6
        WHERE tenant_id = $1 AND wallet = $2 AND id = $3 AND coalesce(slot, ${FREE_SLOT}) IS NOT NULL
        RETURNING ${columns}`,
      [
        tenantId,
        'apple_pay',
        id,
        certificate.certificate,
        certificate.merchantIdentifier,
        certificate.notAfter,
      ],
    );
    return key ?? null;
  }

  /** The key, its row locked for the rest of the change. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, 'apple_pay', EXAMPLE_KEY_ID] })
  async findLocked(
    change: Change,
    tenantId: string,
    wallet: Wallet,
    id: string,
  ): Promise<WalletMerchantKeyEntity | null> {
    const [key] = await select(
      change,
      KEY,
      (columns) => `SELECT ${columns} FROM wallet_merchant_keys
        WHERE tenant_id = $1 AND wallet = $2 AND id = $3 FOR UPDATE`,
      [tenantId, wallet, id],
    );
    return key ?? null;
  }

  @GenerateSql({ params: [EXAMPLE_TENANT, 'google_pay', EXAMPLE_KEY_ID] })
  async findOne(tenantId: string, wallet: Wallet, id: string): Promise<WalletMerchantKeyEntity | null> {
    const [key] = await select(
      this.dataSource,
      KEY,
      (columns) =>
        `SELECT ${columns} FROM wallet_merchant_keys WHERE tenant_id = $1 AND wallet = $2 AND id = $3`,
      [tenantId, wallet, id],
    );
    return key ?? null;
  }

  /** A page of the tenant's keys of a wallet, oldest first, and how many it has in all. */
  @GenerateSql({ params: [EXAMPLE_TENANT, 'apple_pay', 0, 20], answers: [[{ total: 0 }]] })
  async page(
    tenantId: string,
    wallet: Wallet,
    skip: number,
    take: number,
  ): Promise<{ total: number; rows: WalletMerchantKeyEntity[] }> {
    const [{ total }] = await queryRows<{ total: number }>(
      this.dataSource,
      'SELECT count(*)::int AS total FROM wallet_merchant_keys WHERE tenant_id = $1 AND wallet = $2',
      [tenantId, wallet],
    );
    const rows = await select(
      this.dataSource,
      KEY,
      (columns) => `SELECT ${columns} FROM wallet_merchant_keys WHERE tenant_id = $1 AND wallet = $2
        ORDER BY created_at, id OFFSET $3 LIMIT $4`,
      [tenantId, wallet, skip, take],
    );
    return { total, rows };
  }

  /** The tenant's active keys of a wallet (at most 5): those a payload may be encrypted to. */
  @GenerateSql({ params: [EXAMPLE_TENANT, 'google_pay'] })
  async activeKeys(tenantId: string, wallet: Wallet): Promise<WalletMerchantKeyEntity[]> {
    return select(
      this.dataSource,
      KEY,
      (columns) => `SELECT ${columns} FROM wallet_merchant_keys
        WHERE tenant_id = $1 AND wallet = $2 AND status = 'active' ORDER BY slot`,
      [tenantId, wallet],
    );
  }

  /** True when a key was deleted (its private key with it). */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, 'apple_pay', EXAMPLE_KEY_ID] })
  async delete(change: Change, tenantId: string, wallet: Wallet, id: string): Promise<boolean> {
    const deleted = await queryRows<{ id: string }>(
      change,
      'DELETE FROM wallet_merchant_keys WHERE tenant_id = $1 AND wallet = $2 AND id = $3 RETURNING id',
      [tenantId, wallet, id],
    );
    return deleted.length === 1;
  }

  /**
   * Records a payload's transaction id with the change that makes its token (in its one statement): an
   * id the tenant already used fails the whole change with the error `replayed` makes, so the token is
   * not made either.
   */
  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      'apple_pay',
      { digest: Buffer.alloc(32, 1), tokenId: 'token-id', createdAt: EXAMPLE_AT, expiresAt: EXAMPLE_AT },
      () => new Error(),
    ],
  })
  async recordTransaction(
    change: ChangeWrites,
    tenantId: string,
    wallet: Wallet,
    replay: Pick<WalletReplayEntity, 'digest' | 'tokenId' | 'createdAt' | 'expiresAt'>,
    replayed: () => Error,
  ): Promise<void> {
    await change.write(
      ({ p, name, refuse }) => {
        const recorded = name('wallet_replay');
        return {
          ctes: [
            `${recorded} AS (
               INSERT INTO wallet_replays (tenant_id, wallet, digest, token_id, created_at, expires_at)
               VALUES (${p.add(tenantId)}::uuid, ${p.add(wallet)}::text, ${p.add(replay.digest)}::bytea,
                       ${p.add(replay.tokenId)}::text, ${p.add(replay.createdAt)}::timestamptz,
                       ${p.add(replay.expiresAt)}::timestamptz)
               ON CONFLICT DO NOTHING
               RETURNING 1)`,
          ],
          result: refuse(`NOT EXISTS (SELECT 1 FROM ${recorded})`),
        };
      },
      { refused: replayed },
    );
  }

  /** Deletes the transaction ids of every tenant whose payloads expired before `before`; how many. */
  @GenerateSql({ change: true, params: [EXAMPLE_AT] })
  async purgeReplays(change: Change, before: Date): Promise<number> {
    return affectedRows(change, 'DELETE FROM wallet_replays WHERE expires_at < $1', [before]);
  }
}
