import { createHmac, timingSafeEqual } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ConfigError } from '../../config/app-config';
import { LOCK_KEYS } from '../../database/data-source';
import { open } from './aead';
import type { MasterKey, MasterKeyRing } from './master-keys';
import { wrapAad } from './tenant-keys.service';

/** A value that shows whether a key is the one a version was first used with, and tells nothing of it. */
export const checkValue = (key: Buffer): Buffer =>
  createHmac('sha256', key).update('vault:master-key-check:v1').digest();

const list = (versions: string[]): string => versions.join(', ');

/**
 * Contract section 15: a process whose master keys do not match the database stops at start, naming
 * the versions, instead of answering 500 later or wrapping new tenant keys that other processes cannot
 * open. Checks, under an advisory lock so that instances starting together record once:
 * - every configured version already recorded has the recorded check value;
 * - every version a tenant key is wrapped under is configured;
 * - a configured version seen for the first time opens a tenant key wrapped under it, if there is one
 *   (databases from before the check values existed), and is then recorded.
 */
export async function verifyMasterKeys(ring: MasterKeyRing, dataSource: DataSource): Promise<void> {
  await dataSource.transaction(async (manager) => {
    await manager.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.masterKeyChecks]);
    const recorded: { version: string; check_value: Buffer }[] = await manager.query(
      'SELECT version, check_value FROM master_key_checks',
    );
    const byVersion = new Map(recorded.map((row) => [row.version, row.check_value]));
    const matches = (key: MasterKey, value: Buffer): boolean => timingSafeEqual(checkValue(key.key), value);
    const mismatched = ring.keys.filter(
      (k) => byVersion.has(k.version) && !matches(k, byVersion.get(k.version)!),
    );

    const used: { key_version: string; tenants: number }[] = await manager.query(
      `SELECT key_version, count(*)::int AS tenants FROM tenants
        WHERE wrapped_key IS NOT NULL GROUP BY key_version ORDER BY key_version`,
    );
    const missing = used.filter((row) => !ring.get(row.key_version));

    const fresh = ring.keys.filter((k) => !byVersion.has(k.version));
    for (const key of fresh) {
      const [sample]: { id: string; wrapped_key: Buffer }[] = await manager.query(
        'SELECT id, wrapped_key FROM tenants WHERE key_version = $1 AND wrapped_key IS NOT NULL LIMIT 1',
        [key.version],
      );
      try {
        if (sample) open(key.key, sample.wrapped_key, wrapAad(sample.id));
      } catch {
        mismatched.push(key);
      }
    }
    if (mismatched.length)
      throw new ConfigError(
        `ENCRYPTION_KEYS: master key ${list(mismatched.map((k) => k.version))} does not match the key this database was used with under that version (${ring.source}). Use the keys every other server and CLI of this database uses.`,
      );
    if (missing.length)
      throw new ConfigError(
        `ENCRYPTION_KEYS: tenant keys are wrapped by master key ${list(missing.map((m) => m.key_version))} (${missing.reduce((n, m) => n + m.tenants, 0)} tenant(s)), which is not configured (${ring.source} holds ${list(ring.keys.map((k) => k.version))}). Add it back; drop a version only after \`cli keys rotate\`.`,
      );
    for (const key of fresh)
      await manager.query(
        `INSERT INTO master_key_checks (version, check_value, created_at) VALUES ($1, $2, now())
         ON CONFLICT (version) DO NOTHING`,
        [key.version, checkValue(key.key)],
      );
  });
}
