import { timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../../config/load-config';
import type { KeyEncryptionKey } from './key-encryption-key';
import { MasterKeyChecksRepository } from './master-key-checks.repository';
import type { MasterKeyRing } from './master-keys';
import { TenantKeyStore } from './tenant-key.store';
import { wrapAad } from './tenant-keys.service';
import type { UnitOfWork } from '../unit-of-work/unit-of-work';

export { checkValue } from './key-encryption-key';

const list = (versions: string[]): string => versions.join(', ');

export interface MasterKeyCheckDeps {
  work: UnitOfWork;
  checks: MasterKeyChecksRepository;
  tenantKeys: TenantKeyStore;
}

/**
 * A process whose master keys do not match the database stops at start, naming
 * the versions, instead of answering 500 later or wrapping new tenant keys that other processes cannot
 * open. Checks, under an advisory lock so that instances starting together record once:
 * - every configured version already recorded has the recorded check value;
 * - every version a tenant key is wrapped under is configured;
 * - a configured version seen for the first time opens a tenant key wrapped under it, if there is one
 *   (databases from before the check values existed), and is then recorded.
 */
export async function verifyMasterKeys(
  ring: MasterKeyRing,
  { work, checks, tenantKeys }: MasterKeyCheckDeps,
): Promise<void> {
  // One change of the process's own, before it serves anything: nothing audited.
  await work.transaction({}, async (change) => {
    await checks.lock(change);
    const recorded = await checks.all(change);
    const byVersion = new Map(recorded.map((row) => [row.version, row.checkValue]));
    const matches = (key: KeyEncryptionKey, value: Buffer): boolean => {
      const own = key.checkValue();
      return own.length === value.length && timingSafeEqual(own, value);
    };
    const mismatched = ring.keys.filter(
      (k) => byVersion.has(k.version) && !matches(k, byVersion.get(k.version)!),
    );

    const used = await tenantKeys.countByVersion(change);
    const missing = used.filter((row) => !ring.get(row.keyVersion));

    const fresh = ring.keys.filter((k) => !byVersion.has(k.version));
    for (const key of fresh) {
      const sample = await tenantKeys.sample(change, key.version);
      try {
        if (sample) key.unwrap(sample.wrappedKey, wrapAad(sample.tenantId));
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
        `ENCRYPTION_KEYS: tenant keys are wrapped by master key ${list(missing.map((m) => m.keyVersion))} (${missing.reduce((n, m) => n + m.tenants, 0)} tenant(s)), which is not configured (${ring.source} holds ${list(ring.keys.map((k) => k.version))}). Add it back; drop a version only after \`cli keys rotate\`.`,
      );
    for (const key of fresh)
      await checks.record(change, {
        version: key.version,
        checkValue: key.checkValue(),
        provider: ring.provider,
      });
  });
}
