import { Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { AppConfig } from '../../config/app-config';
import { KeyProviderUnavailableError } from '../crypto/key-encryption-key';
import { MasterKeyRing } from '../crypto/master-keys';
import { Clock } from '../jobs/clock';
import type { Change } from '../unit-of-work/change';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { AuditSigningKeysRepository, type SigningKeyRow } from './audit-signing-keys.repository';
import { keyId, publicKeyOf, verifierKey, type NoteKey } from './tree/signed-note';

/** The key that signs checkpoints now. */
export interface SigningKey extends NoteKey {
  seed: Buffer;
  keyId: string;
}

/** A listed key as `GET /logs/checkpoint/keys` shows it. */
export interface PublishedKey {
  name: string;
  key_id: string;
  public_key: string;
  verifier_key: string;
  created_at: string;
}

const aad = (publicKey: Buffer) => `audit-signing-key:${publicKey.toString('hex')}`;

/**
 * The Ed25519 keys that sign checkpoints. The seed comes from AUDIT_SIGNING_KEY or, when that is unset, is
 * generated once; either way it is stored sealed under the master key, so that verification can tell the
 * service's keys from a key someone with database access added. Old keys stay listed (old checkpoints
 * still verify). The key's name is `<PUBLIC_BASE_URL host>/audit`.
 */
@Injectable()
export class AuditSigningKeys {
  constructor(
    private readonly keys: AuditSigningKeysRepository,
    private readonly config: AppConfig,
    private readonly ring: MasterKeyRing,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
  ) {}

  /**
   * With master key rotation (`keys rotate`): seals every key's seed under the active master key, so that
   * the old master key can go without losing the signing keys. Returns how many were sealed again. In
   * `within` when given.
   */
  async reseal(within?: Change): Promise<number> {
    const active = this.ring.active;
    const run = async (change: Change) => {
      let resealed = 0;
      for (const row of await this.keys.list(change)) {
        if (row.master_key_version === active.version) continue;
        const seed = this.unseal(row);
        if (!seed) continue;
        await this.keys.reseal(change, row.id, active.wrap(seed, aad(row.public_key)), active.version);
        resealed++;
      }
      return resealed;
    };
    // In the caller's change (a change of provider re-wraps everything in one) or in one of its own.
    return within ? run(within) : this.work.transaction({}, run);
  }

  /** `<host>/audit`: the host of PUBLIC_BASE_URL, with its port when it has one. */
  get name(): string {
    return `${new URL(this.config.publicBaseUrl).host}/audit`;
  }

  /** The checkpoint origin of a tenant's log. */
  origin(tenantId: string): string {
    return `${this.name}/${tenantId}`;
  }

  /**
   * The signing key, listed first if it is not yet (in the checkpointer's change, under its lock): the
   * configured one, else the newest generated one, else a new one.
   */
  async current(change: Change, now = this.clock.now()): Promise<SigningKey> {
    const rows = await this.keys.list(change);
    const name = this.name;
    let seed: Buffer | undefined;
    if (this.config.AUDIT_SIGNING_KEY) seed = Buffer.from(this.config.AUDIT_SIGNING_KEY, 'base64');
    else
      for (const row of [...rows].reverse()) {
        seed = this.unseal(row);
        if (seed) break;
      }
    seed ??= randomBytes(32);
    const publicKey = publicKeyOf(seed);
    const key = { name, publicKey, seed, keyId: keyId({ name, publicKey }) };
    if (!rows.some((row) => row.name === name && row.public_key.equals(publicKey)))
      await this.keys.insert(change, {
        id: randomUUID(),
        name,
        key_id: key.keyId,
        public_key: publicKey,
        sealed_seed: this.ring.active.wrap(seed, aad(publicKey)),
        master_key_version: this.ring.active.version,
        created_at: now,
      });
    return key;
  }

  /** Every listed key. */
  async published(): Promise<PublishedKey[]> {
    return (await this.keys.list()).map((row) => ({
      name: row.name,
      key_id: row.key_id,
      public_key: row.public_key.toString('base64'),
      verifier_key: verifierKey({ name: row.name, publicKey: row.public_key }),
      created_at: row.created_at.toISOString(),
    }));
  }

  /**
   * The listed keys this service can vouch for: those whose sealed seed opens under a master key it holds
   * and gives the listed public key. A key added to the table by anyone else is not among them.
   */
  async trusted(): Promise<NoteKey[]> {
    return (await this.keys.list())
      .filter((row) => this.unseal(row) !== undefined)
      .map((row) => ({ name: row.name, publicKey: row.public_key }));
  }

  private unseal(row: SigningKeyRow): Buffer | undefined {
    const master = row.master_key_version ? this.ring.get(row.master_key_version) : undefined;
    if (!master || !row.sealed_seed) return undefined;
    try {
      const seed = master.unwrap(row.sealed_seed, aad(row.public_key));
      return publicKeyOf(seed).equals(row.public_key) ? seed : undefined;
    } catch (error) {
      // An HSM that does not answer says nothing of the key: the caller fails rather than distrust it.
      if (error instanceof KeyProviderUnavailableError) throw error;
      return undefined;
    }
  }
}
