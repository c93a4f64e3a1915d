import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { split } from 'shamir-secret-sharing';
import { AuditSigningKeys } from '../../common/audit/audit-signing-keys.service';
import { checkValue, type KeyEncryptionKey, MemoryKek } from '../../common/crypto/key-encryption-key';
import { MAX_SHARES } from '../../common/crypto/key-ceremony';
import { MasterKeyChecksRepository } from '../../common/crypto/master-key-checks.repository';
import { checkPkcs11Settings, MasterKeyRing, pkcs11Device } from '../../common/crypto/master-keys';
import { checkLabel, shareLine } from '../../common/crypto/shares';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { KeyRecords } from '../../common/crypto/key-records';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/load-config';

/** `vault keys rotate --to`: where the key-encrypting key goes, and for `split` how it is shared. */
export interface ProviderChangeRequest {
  to: 'split' | 'pkcs11' | 'env';
  shares?: number;
  threshold?: number;
  /**
   * `split`: the directory the shares are written to (one file each, mode 0600); `env`: the file the
   * `ENCRYPTION_KEYS` value is written to (mode 0600, a new file); either before anything changes.
   */
  out?: string;
}

export interface ProviderChanged {
  from: string;
  to: 'split' | 'pkcs11' | 'env';
  active_version: string;
  rewrapped_tenants: number;
  resealed_signing_keys: number;
  /** `pkcs11`: the new key's check value; `split`, `env`: its check label. */
  check: string;
  /** `split`: the files written, one per custodian. */
  share_files?: string[];
}

/** A change of provider the operator can fix (shown as one line; nothing changed). */
export class ProviderChangeRefusal extends Error {}

/**
 * `vault keys rotate --to split|pkcs11|env`, run with every server stopped: a new key-encrypting key under
 * the new provider (made in the HSM, or made here and split among custodians or written to a file as an
 * `ENCRYPTION_KEYS` value, before anything else changes), then, in one change, its version recorded, every tenant data key re-wrapped
 * under it and the audit log's signing seeds sealed again. The servers then start with the new
 * provider's settings. A failure before the change commits leaves the database as it was (a key made in
 * the token stays there unused; share files written are void and say so).
 */
@Injectable()
export class ProviderChange {
  constructor(
    private readonly ring: MasterKeyRing,
    private readonly work: UnitOfWork,
    private readonly checks: MasterKeyChecksRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly signingKeys: AuditSigningKeys,
    private readonly config: AppConfig,
    private readonly records: KeyRecords,
  ) {}

  async run(request: ProviderChangeRequest): Promise<ProviderChanged> {
    // Under split the CLI opened the key from its custodians' shares first (cli-shares.ts).
    if (this.ring.sealed)
      throw new ProviderChangeRefusal('keys rotate --to refused: this process holds no key to re-wrap from');
    if (request.to === this.ring.provider)
      throw new ProviderChangeRefusal(
        `keys rotate --to refused: the keys are under ${request.to} already; \`vault keys rotate\` rotates within it`,
      );
    const recorded = await this.work.transaction({}, (change) => this.checks.all(change));
    const next = `v${Math.max(0, ...recorded.map((c) => Number(c.version.slice(1)))) + 1}`;
    const made =
      request.to === 'pkcs11'
        ? this.inHsm(recorded.map((c) => c.version))
        : request.to === 'env'
          ? this.inEnv(next, request.out)
          : await this.split(next, request);
    this.ring.adopt(made.kek);
    const from = this.ring.provider;
    // The attempt on record even if what follows fails.
    await this.records.note(
      made.kek.version,
      'update',
      `Key-encrypting key moving from ${from} to ${request.to}: ${made.kek.version} made (check ${made.check})`,
    );
    const result = await this.records.transaction(async (change, record) => {
      await this.checks.lock(change);
      if (!(await this.checks.record(change, made.record)))
        throw new ProviderChangeRefusal(
          `keys rotate --to refused: version ${made.kek.version} was recorded meanwhile; run it again`,
        );
      const rewrapped = await this.tenantKeys.rotate(change);
      const resealed = await this.signingKeys.reseal(change);
      record(
        made.kek.version,
        'update',
        `Key-encrypting key moved from ${from} to ${request.to}: ${rewrapped.rewrapped} tenant keys and ${resealed} signing keys under ${made.kek.version}`,
      );
      return { rewrapped: rewrapped.rewrapped, resealed };
    });
    return {
      from,
      to: request.to,
      active_version: made.kek.version,
      rewrapped_tenants: result.rewrapped,
      resealed_signing_keys: result.resealed,
      check: made.check,
      ...(made.files ? { share_files: made.files } : {}),
    };
  }

  /** The next version made in the HSM named by the PKCS11_* settings. */
  private inHsm(recorded: string[]) {
    try {
      checkPkcs11Settings(this.config);
    } catch (error) {
      if (error instanceof ConfigError)
        throw new ProviderChangeRefusal(`keys rotate --to pkcs11 refused: ${error.message}`);
      throw error;
    }
    const device = pkcs11Device(this.config);
    const version = device.generate(recorded);
    const kek = device.key(version);
    const kcv = kek.checkValue();
    return {
      kek,
      check: kcv.toString('hex').toUpperCase(),
      record: { version, checkValue: kcv, provider: 'pkcs11' as const },
      files: undefined,
    };
  }

  /**
   * A new key written as the one line of an `ENCRYPTION_KEYS` value (`v<N>:<base64>`) to `out`, a new
   * file of mode 0600, before anything else changes; the servers then start with it.
   */
  private inEnv(version: string, out: string | undefined) {
    if (out === undefined)
      throw new ProviderChangeRefusal(
        'keys rotate --to env refused: --out FILE is required (the new ENCRYPTION_KEYS value is written there)',
      );
    const key = randomBytes(32);
    const kek: KeyEncryptionKey = new MemoryKek(version, Buffer.from(key));
    const check = checkValue(key);
    try {
      writeFileSync(out, `${version}:${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ProviderChangeRefusal(
        `keys rotate --to env refused: ${out} cannot be written (${code === 'EEXIST' ? 'it exists already' : code}); nothing was changed`,
      );
    } finally {
      key.fill(0);
    }
    return {
      kek,
      check: checkLabel(check),
      record: { version, checkValue: check, provider: 'env' as const },
      files: undefined,
    };
  }

  /** A new key split into shares written to `out` (before anything else changes); the key kept in memory only. */
  private async split(version: string, request: ProviderChangeRequest) {
    const { shares, threshold, out } = request;
    if (shares === undefined || threshold === undefined || out === undefined)
      throw new ProviderChangeRefusal(
        'keys rotate --to split refused: --shares, --threshold and --out are required',
      );
    if (threshold < 2 || threshold > shares || shares > MAX_SHARES)
      throw new ProviderChangeRefusal(
        `keys rotate --to split refused: it needs 2 <= threshold <= shares <= ${MAX_SHARES}`,
      );
    const key = randomBytes(32);
    const kek: KeyEncryptionKey = new MemoryKek(version, Buffer.from(key));
    const check = checkValue(key);
    const label = checkLabel(check);
    const parts = await split(new Uint8Array(key), shares, threshold);
    key.fill(0);
    mkdirSync(out, { recursive: true, mode: 0o700 });
    const files = parts.map((payload, i) => {
      const file = join(out, `share-${i + 1}.txt`);
      writeFileSync(
        file,
        `${shareLine({ version, check: label, index: i + 1, payload: Buffer.from(payload) })}\n`,
        {
          mode: 0o600,
          flag: 'wx',
        },
      );
      return file;
    });
    return {
      kek,
      check: label,
      record: { version, checkValue: check, provider: 'split' as const, threshold, shares },
      files,
    };
  }
}
