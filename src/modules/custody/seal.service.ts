import { Injectable, Logger } from '@nestjs/common';
import { MemoryKek } from '../../common/crypto/key-encryption-key';
import { verifyMasterKeys } from '../../common/crypto/master-key-checks';
import { MasterKeyCheck, MasterKeyChecksRepository } from '../../common/crypto/master-key-checks.repository';
import { MasterKeyRing } from '../../common/crypto/master-keys';
import { KeyRecords } from '../../common/crypto/key-records';
import { TenantKeyStore } from '../../common/crypto/tenant-key.store';
import { ProblemException } from '../../common/errors/problem.exception';
import { Clock } from '../../common/jobs/clock';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { ConfigError } from '../../config/load-config';
import {
  neededVersions,
  ShareCollector,
  type ShareRefusal,
  versionNumber,
} from '../../common/crypto/share-custody';

/** `GET /sys/seal-status`, and the answer to each share entered. */
export interface SealStatus {
  sealed: boolean;
  /** Distinct valid shares entered so far (0 once unsealed). */
  progress: number;
  threshold: number | null;
  kek_version: string | null;
  /** Unsealed: a newer split version whose shares are being entered (`progress` of `threshold` are its). */
  adopting?: string;
}

/** Why a share did not count: the words `vault unseal` prints, and the problem's code. */
export const SHARE_REFUSALS: Record<ShareRefusal, string> = {
  'another key': 'share_of_another_key',
  corrupted: 'share_corrupted',
  'already entered': 'share_already_entered',
};

const refused = (why: ShareRefusal, detail: string): ProblemException =>
  new ProblemException(422, detail, { code: SHARE_REFUSALS[why] });

/** Attempts to enter a share an address may make per minute. */
export const UNSEAL_ATTEMPTS_PER_MINUTE = 10;
const ADDRESSES_REMEMBERED = 10_000;

/**
 * The custodians' side of a `split` server: shares entered one at a time (`POST /sys/unseal`), kept in
 * this process's memory only, each checked by itself and counted by key version (ShareCollector), and,
 * once a version has its threshold, combined into its key-encrypting key, whose check value must be the
 * one its ceremony recorded (`openShares`, the CLI's code path too). A sealed server collects the
 * versions it needs one after another (the last ceremony's, and any older one still wrapping a data key
 * or signing key: a rotation not finished) and unseals once it holds them all. An unsealed server takes
 * shares of a version a later ceremony recorded and, once they open it, adopts it as its active key
 * (rotation online, docs/keys.md). Every instance is unsealed on its own.
 */
@Injectable()
export class SealService {
  private readonly logger = new Logger('Custody');
  /** Sealed: the shares of the versions this server needs (read once, when first asked). */
  private unsealing: ShareCollector | undefined;
  /** Unsealed: the shares of a newer split version to adopt. */
  private adopting: ShareCollector | undefined;
  private readonly attempts = new Map<string, number[]>();

  constructor(
    private readonly ring: MasterKeyRing,
    private readonly work: UnitOfWork,
    private readonly checks: MasterKeyChecksRepository,
    private readonly tenantKeys: TenantKeyStore,
    private readonly clock: Clock,
    private readonly records: KeyRecords,
  ) {}

  async status(): Promise<SealStatus> {
    if (!this.ring.sealed) {
      const active = this.ring.active.version;
      const adopting = (await this.newer())?.collecting;
      const own = (await this.recorded()).find((check) => check.version === active);
      if (adopting)
        return {
          sealed: false,
          progress: this.adopting!.progress(adopting.version),
          threshold: adopting.threshold ?? null,
          kek_version: active,
          adopting: adopting.version,
        };
      return { sealed: false, progress: 0, threshold: own?.threshold ?? null, kek_version: active };
    }
    const collecting = (await this.collector()).collecting!;
    return {
      sealed: true,
      progress: this.unsealing!.progress(collecting.version),
      threshold: collecting.threshold ?? null,
      kek_version: collecting.version,
    };
  }

  /**
   * Counts one share from `address`. Refused (422, not counted) when it is damaged, of another key, or
   * entered already; 429 past UNSEAL_ATTEMPTS_PER_MINUTE attempts of the address. The last share needed
   * unseals (or adopts a newer version), or, where the shares do not open the recorded key, forgets that
   * version's shares (422). An unsealed server with no newer version recorded ignores it.
   */
  async enter(line: string, address: string): Promise<SealStatus> {
    this.limit(address);
    const collector = this.ring.sealed ? await this.collector() : await this.newer();
    if (!collector) return this.status();
    const about = collector.collecting!.version;
    const offered = collector.offer(line);
    // Each share on record in the system log, by its index: never its value.
    if ('refused' in offered) {
      const why =
        offered.refused === 'another key'
          ? `a share of another key (${offered.version})`
          : offered.refused === 'corrupted'
            ? 'corrupted'
            : 'entered already';
      const which = offered.index === undefined ? 'A share' : `Share ${offered.index}`;
      await this.records.note(about, 'refuse', `${which} entered at unseal was refused: ${why}`);
      throw refused(offered.refused, offered.detail);
    }
    const { counted, index } = offered;
    const progress = `share ${index} of key ${counted.version} entered (${offered.progress} of ${counted.threshold})`;
    this.logger.log(progress);
    await this.records.note(counted.version, 'use', `Unseal: ${progress}`);
    if (offered.full) await this.open(collector, counted);
    return this.status();
  }

  /** Forgets every share entered (`vault unseal --reset`). */
  async reset(): Promise<SealStatus> {
    const collector = this.ring.sealed ? this.unsealing : this.adopting;
    const forgotten = collector?.forget() ?? 0;
    if (collector)
      await this.records.note(null, 'update', `Unseal reset: ${forgotten} share(s) entered forgotten`);
    return this.status();
  }

  private async open(collector: ShareCollector, check: MasterKeyCheck): Promise<void> {
    const { version } = check;
    const { indexes, opened: ok } = await collector.open(check);
    if (!ok) {
      await this.records.note(
        version,
        'refuse',
        `Unseal: shares ${indexes.join(', ')} did not open key ${version}; every share entered was forgotten`,
      );
      throw new ProblemException(
        422,
        `The ${indexes.length} shares entered do not open key ${version}: at least one of them is not a share of it. Every share of it entered was forgotten; enter them again.`,
        { code: 'shares_do_not_open_key' },
      );
    }
    const by = `key ${version} opened by shares ${indexes.join(', ')}`;
    if (!this.ring.sealed) {
      // A newer ceremony's key: the active one from now on, in this process.
      const [adopted] = collector.keys();
      collector.forget();
      this.adopting = undefined;
      this.ring.adopt(new MemoryKek(adopted.version, adopted.key));
      this.logger.log(`${by}: adopted as the active key-encrypting key`);
      await this.records.note(version, 'use', `Adopted: ${by}; new data keys are wrapped under it`);
      return;
    }
    if (collector.collecting) {
      this.logger.log(`${by}; key ${collector.collecting.version} still to open`);
      await this.records.note(
        version,
        'use',
        `Unseal: ${by}; key ${collector.collecting.version} still to open`,
      );
      return;
    }
    const opened = collector.keys();
    collector.forget();
    this.unsealing = undefined;
    const ring = new MasterKeyRing(opened, 'KEY_PROVIDER=split');
    try {
      await verifyMasterKeys(ring, { work: this.work, checks: this.checks, tenantKeys: this.tenantKeys });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      throw new ProblemException(409, error.message, { code: 'key_does_not_fit_database' });
    }
    this.ring.unseal(opened);
    const held = opened.length > 1 ? ` (keys ${opened.map((k) => k.version).join(', ')} held)` : '';
    this.logger.log(`unsealed: ${by}${held}`);
    await this.records.note(version, 'use', `Unsealed: ${by}${held}`);
  }

  /** Sealed: what this server collects shares for, read from the database once. */
  private async collector(): Promise<ShareCollector> {
    if (this.unsealing) return this.unsealing;
    const needed = await this.work.transaction({}, (change) =>
      neededVersions(change, this.checks, this.tenantKeys),
    );
    if (!needed.length)
      throw new ProblemException(
        409,
        'No key ceremony is recorded for this database: run `vault keys ceremony --shares N --threshold M` first.',
        { code: 'no_key_ceremony' },
      );
    this.unsealing = new ShareCollector(needed);
    return this.unsealing;
  }

  /** Unsealed: the collector of a split version recorded after the active one, if there is one. */
  private async newer(): Promise<ShareCollector | undefined> {
    if (this.ring.provider !== 'split') return undefined;
    const last = (await this.recorded()).filter((check) => check.provider === 'split').at(-1);
    const active = this.ring.active.version;
    if (!last || this.ring.get(last.version) || versionNumber(last.version) <= versionNumber(active)) {
      this.adopting?.forget();
      this.adopting = undefined;
      return undefined;
    }
    if (this.adopting?.needed[0].version !== last.version) {
      this.adopting?.forget();
      this.adopting = new ShareCollector([last]);
    }
    return this.adopting;
  }

  private recorded(): Promise<MasterKeyCheck[]> {
    return this.work.transaction({}, (change) => this.checks.all(change));
  }

  private limit(address: string): void {
    const now = this.clock.now().getTime();
    const recent = (this.attempts.get(address) ?? []).filter((at) => at > now - 60_000);
    if (recent.length >= UNSEAL_ATTEMPTS_PER_MINUTE) {
      const retry = Math.max(1, Math.ceil((recent[0] + 60_000 - now) / 1000));
      throw new ProblemException(
        429,
        `Too many shares entered from this address; retry in ${retry} seconds.`,
        { code: 'too_many_unseal_attempts', headers: { 'Retry-After': String(retry) } },
      );
    }
    if (this.attempts.size >= ADDRESSES_REMEMBERED) this.attempts.clear();
    this.attempts.set(address, [...recent, now]);
  }
}
