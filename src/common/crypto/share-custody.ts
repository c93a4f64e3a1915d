import { timingSafeEqual } from 'node:crypto';
import { combine } from 'shamir-secret-sharing';
import type { Change } from '../unit-of-work/change';
import { checkValue } from './key-encryption-key';
import type { MasterKeyCheck, MasterKeyChecksRepository } from './master-key-checks.repository';
import type { MasterKey } from './master-keys';
import { checkLabel, parseShare, type Share } from './shares';
import type { TenantKeyStore } from './tenant-key.store';

/** Why a share did not count, in the words `vault unseal` and the CLI print. */
export type ShareRefusal = 'another key' | 'corrupted' | 'already entered';

/** The number of a version (`v12` -> 12). */
export const versionNumber = (version: string): number => Number(version.slice(1));

/**
 * Combines custodians' shares (Shamir over GF(256)) into the key they split, and answers it only when
 * its check value is the one recorded for its version: undefined for shares that do not open it (one
 * of them forged or of another split). The shares' payloads are overwritten, whatever the outcome. The
 * one code path by which a server (SealService) and the CLI open a split key.
 */
export async function openShares(shares: Share[], expected: MasterKeyCheck): Promise<Buffer | undefined> {
  let key: Buffer;
  try {
    key = Buffer.from(await combine(shares.map((s) => new Uint8Array(s.payload))));
  } catch {
    key = Buffer.alloc(0);
  } finally {
    for (const share of shares) share.payload.fill(0);
  }
  const own = key.length === 32 ? checkValue(key) : Buffer.alloc(0);
  if (own.length !== expected.checkValue.length || !timingSafeEqual(own, expected.checkValue)) {
    key.fill(0);
    return undefined;
  }
  return key;
}

/**
 * The split versions a process under KEY_PROVIDER=split must open, oldest first: the last one a
 * ceremony recorded (the active one) and every other split version that still wraps a tenant data key
 * or an audit signing key (a rotation not finished). Read in `change`.
 */
export async function neededVersions(
  change: Change,
  checks: MasterKeyChecksRepository,
  tenantKeys: TenantKeyStore,
): Promise<MasterKeyCheck[]> {
  const split = (await checks.all(change)).filter((check) => check.provider === 'split');
  const last = split.at(-1);
  const wrapping = new Set([
    ...(await tenantKeys.countByVersion(change)).map((row) => row.keyVersion),
    ...(await checks.signingKeyVersions(change)),
  ]);
  return split
    .filter((check) => check === last || wrapping.has(check.version))
    .sort((a, b) => versionNumber(a.version) - versionNumber(b.version));
}

/** What became of a share line offered to a collector. */
export type Offered =
  | { refused: ShareRefusal; detail: string; index?: number; version?: string }
  | { counted: MasterKeyCheck; index: number; progress: number; full: boolean };

/**
 * Shares of one or more split versions, entered one line at a time and kept in memory only: each line
 * checked by itself (format and digest, a version and check label it needs, not one entered already),
 * counted by version, opened (`open`) once a version has its threshold. Used by SealService (shares sent
 * to a server) and the CLI (shares on standard input or in files).
 */
export class ShareCollector {
  private readonly entered = new Map<string, Share[]>();
  private readonly opened = new Map<string, Buffer>();

  constructor(readonly needed: MasterKeyCheck[]) {}

  /** The first version still to open; undefined once every needed version is open. */
  get collecting(): MasterKeyCheck | undefined {
    return this.needed.find((check) => !this.opened.has(check.version));
  }

  /** Shares counted so far towards `version`. */
  progress(version: string): number {
    return this.entered.get(version)?.length ?? 0;
  }

  offer(line: string): Offered {
    const share = parseShare(line);
    if (share === 'corrupted')
      return {
        refused: 'corrupted',
        detail: 'The share is corrupted (its format or digest does not hold); it does not count.',
      };
    const { index, version } = share;
    const check = this.needed.find((c) => c.version === version && share.check === checkLabel(c.checkValue));
    if (!check)
      return {
        refused: 'another key',
        index,
        version,
        detail: `The share is one of another key (${version}), not of ${this.needed.map((c) => c.version).join(' or ')}, the key this vault needs; it does not count.`,
      };
    if (this.opened.has(version))
      return {
        refused: 'already entered',
        index,
        version,
        detail: `Key ${version} is open already; share ${index} does not count.`,
      };
    const entered = this.entered.get(version) ?? [];
    if (entered.some((s) => s.index === index || s.payload[32] === share.payload[32]))
      return {
        refused: 'already entered',
        index,
        version,
        detail: `Share ${index} of key ${version} was entered already; it counts once.`,
      };
    entered.push(share);
    this.entered.set(version, entered);
    return { counted: check, index, progress: entered.length, full: entered.length >= check.threshold! };
  }

  /**
   * Combines the shares counted towards `check`'s version and forgets them: the indexes combined, and
   * whether they opened its key (then held here; `keys` hands out copies).
   */
  async open(check: MasterKeyCheck): Promise<{ indexes: number[]; opened: boolean }> {
    const shares = this.entered.get(check.version) ?? [];
    this.entered.delete(check.version);
    const indexes = shares.map((s) => s.index).sort((a, b) => a - b);
    const key = await openShares(shares, check);
    if (key) this.opened.set(check.version, key);
    return { indexes, opened: key !== undefined };
  }

  /** A copy of every key opened, oldest version first (the last one active). */
  keys(): MasterKey[] {
    return [...this.opened.entries()]
      .map(([version, key]) => ({ version, key: Buffer.from(key) }))
      .sort((a, b) => versionNumber(a.version) - versionNumber(b.version));
  }

  /** Forgets every share entered and every key opened (overwritten). */
  forget(): number {
    const forgotten = [...this.entered.values()].reduce((n, list) => n + list.length, 0);
    for (const list of this.entered.values()) for (const share of list) share.payload.fill(0);
    for (const key of this.opened.values()) key.fill(0);
    this.entered.clear();
    this.opened.clear();
    return forgotten;
  }
}
