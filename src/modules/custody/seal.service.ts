import { Injectable, Logger } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { combine } from 'shamir-secret-sharing';
import { checkValue, verifyMasterKeys } from '../../common/crypto/master-key-checks';
import { MasterKeyCheck, MasterKeyChecksRepository } from '../../common/crypto/master-key-checks.repository';
import { MasterKeyRing } from '../../common/crypto/master-keys';
import { KeyRecords } from '../../common/crypto/key-records';
import { TenantKeyStore } from '../../common/crypto/tenant-key.store';
import { ProblemException } from '../../common/errors/problem.exception';
import { Clock } from '../../common/jobs/clock';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { ConfigError } from '../../config/load-config';
import { checkLabel, parseShare, Share } from '../../common/crypto/shares';

/** `GET /sys/seal-status`, and the answer to each share entered. */
export interface SealStatus {
  sealed: boolean;
  /** Distinct valid shares entered so far (0 once unsealed). */
  progress: number;
  threshold: number | null;
  kek_version: string | null;
}

/** Why a share did not count: the words `vault unseal` prints, and the problem's code. */
export const SHARE_REFUSALS = {
  'another key': 'share_of_another_key',
  corrupted: 'share_corrupted',
  'already entered': 'share_already_entered',
} as const;

export type ShareRefusal = keyof typeof SHARE_REFUSALS;

const refused = (why: ShareRefusal, detail: string): ProblemException =>
  new ProblemException(422, detail, { code: SHARE_REFUSALS[why] });

/** Attempts to enter a share an address may make per minute. */
export const UNSEAL_ATTEMPTS_PER_MINUTE = 10;
const ADDRESSES_REMEMBERED = 10_000;

/**
 * The custodians' side of a `split` server: shares entered one at a time (`POST /sys/unseal`), kept in
 * this process's memory only, each checked by itself (its format and digest, the KEK version and check
 * label it names, not one already entered), and, once as many as the threshold, combined (Shamir over
 * GF(256)) into the key-encrypting key, whose check value must be the one its ceremony recorded. The
 * ring is then unsealed; the shares are forgotten whatever the outcome. Every instance is unsealed on
 * its own.
 */
@Injectable()
export class SealService {
  private readonly logger = new Logger('Custody');
  /** Shares entered, by their x coordinate. */
  private readonly entered = new Map<number, Share>();
  private custody: MasterKeyCheck | undefined;
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
    if (!this.ring.sealed)
      return {
        sealed: false,
        progress: 0,
        threshold: this.custody?.threshold ?? null,
        kek_version: this.ring.active.version,
      };
    const custody = await this.expected();
    return {
      sealed: true,
      progress: this.entered.size,
      threshold: custody.threshold ?? null,
      kek_version: custody.version,
    };
  }

  /**
   * Counts one share from `address`. Refused (422, not counted) when it is damaged, of another key, or
   * entered already; 429 past UNSEAL_ATTEMPTS_PER_MINUTE attempts of the address. The last share needed
   * unseals, or, where the shares do not open the recorded key, forgets them all (422).
   */
  async enter(line: string, address: string): Promise<SealStatus> {
    this.limit(address);
    if (!this.ring.sealed) return this.status();
    const custody = await this.expected();
    const share = parseShare(line);
    // Each share on record in the system log, by its index: never its value.
    if (share === 'corrupted') {
      await this.records.note(custody.version, 'refuse', 'A share entered at unseal was refused: corrupted');
      throw refused(
        'corrupted',
        'The share is corrupted (its format or digest does not hold); it does not count.',
      );
    }
    if (share.version !== custody.version || share.check !== checkLabel(custody.checkValue)) {
      await this.records.note(
        custody.version,
        'refuse',
        `Share ${share.index} entered at unseal was refused: a share of another key (${share.version})`,
      );
      throw refused(
        'another key',
        `The share is one of another key (${share.version}), not of ${custody.version}, the key this vault is sealed under; it does not count.`,
      );
    }
    const x = share.payload[32];
    if (this.entered.has(x) || [...this.entered.values()].some((s) => s.index === share.index)) {
      await this.records.note(
        custody.version,
        'refuse',
        `Share ${share.index} entered at unseal was refused: entered already`,
      );
      throw refused('already entered', `Share ${share.index} was entered already; it counts once.`);
    }
    this.entered.set(x, share);
    const progress = `share ${share.index} of key ${custody.version} entered (${this.entered.size} of ${custody.threshold})`;
    this.logger.log(progress);
    await this.records.note(custody.version, 'use', `Unseal: ${progress}`);
    if (this.entered.size >= custody.threshold!) await this.open(custody);
    return this.status();
  }

  /** Forgets every share entered (`vault unseal --reset`). */
  async reset(): Promise<SealStatus> {
    const forgotten = this.entered.size;
    this.entered.clear();
    if (this.ring.sealed)
      await this.records.note(null, 'update', `Unseal reset: ${forgotten} share(s) entered forgotten`);
    return this.status();
  }

  private async open(custody: MasterKeyCheck): Promise<void> {
    const indexes = [...this.entered.values()].map((s) => s.index).sort((a, b) => a - b);
    const shares = [...this.entered.values()].map((s) => new Uint8Array(s.payload));
    this.entered.clear();
    let key: Buffer;
    try {
      key = Buffer.from(await combine(shares));
    } catch {
      key = Buffer.alloc(0);
    }
    if (key.length !== 32 || !timingSafeEqual(checkValue(key), custody.checkValue)) {
      await this.records.note(
        custody.version,
        'refuse',
        `Unseal: shares ${indexes.join(', ')} did not open key ${custody.version}; every share entered was forgotten`,
      );
      throw new ProblemException(
        422,
        `The ${shares.length} shares entered do not open key ${custody.version}: at least one of them is not a share of it. Every share entered was forgotten; enter them again.`,
        { code: 'shares_do_not_open_key' },
      );
    }
    const opened = [{ version: custody.version, key }];
    const ring = new MasterKeyRing(opened, 'KEY_PROVIDER=split');
    try {
      await verifyMasterKeys(ring, { work: this.work, checks: this.checks, tenantKeys: this.tenantKeys });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      throw new ProblemException(409, error.message, { code: 'key_does_not_fit_database' });
    }
    this.ring.unseal(opened);
    this.logger.log(`unsealed: key ${custody.version} opened by ${shares.length} custodians' shares`);
    await this.records.note(
      custody.version,
      'use',
      `Unsealed: key ${custody.version} opened by shares ${indexes.join(', ')}`,
    );
  }

  /** The split key this database's ceremony recorded last (read once). */
  private async expected(): Promise<MasterKeyCheck> {
    if (this.custody) return this.custody;
    const all = await this.work.transaction({}, (change) => this.checks.all(change));
    const split = all.filter((check) => check.provider === 'split').at(-1);
    if (!split)
      throw new ProblemException(
        409,
        'No key ceremony is recorded for this database: run `vault keys ceremony --shares N --threshold M` first.',
        { code: 'no_key_ceremony' },
      );
    this.custody = split;
    return split;
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
