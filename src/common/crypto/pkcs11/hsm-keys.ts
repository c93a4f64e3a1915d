import { Injectable } from '@nestjs/common';
import { KeyRecords } from '../key-records';
import { MasterKeyChecksRepository } from '../master-key-checks.repository';
import { MasterKeyRing } from '../master-keys';

/** What `vault keys ceremony --provider pkcs11` answers: the new version and its key check value (hex), nothing of the key. */
export interface GeneratedKey {
  version: string;
  provider: 'pkcs11';
  kcv: string;
}

/** A pkcs11 ceremony asked of a process whose keys are not in an HSM. */
export class NotInHsmError extends Error {}

/**
 * `vault keys ceremony --provider pkcs11` (KEY_PROVIDER=pkcs11): a new key-encrypting key made by the HSM inside its token,
 * sensitive and not extractable, labelled `<PKCS11_KEY_LABEL>-v<N>` with N past every version this
 * database recorded (under the checks' lock), and its key check value recorded. Servers use it from their
 * next start (a rolling restart), `keys rotate` then re-wraps every tenant key under it.
 */
@Injectable()
export class HsmKeys {
  constructor(
    private readonly ring: MasterKeyRing,
    private readonly records: KeyRecords,
    private readonly checks: MasterKeyChecksRepository,
  ) {}

  async generate(): Promise<GeneratedKey> {
    const device = this.ring.device;
    if (!device) throw new NotInHsmError();
    return this.records.transaction(async (change, record) => {
      await this.checks.lock(change);
      const recorded = (await this.checks.all(change)).map((check) => check.version);
      const version = device.generate(recorded);
      const check = device.key(version).checkValue();
      await this.checks.record(change, { version, checkValue: check, provider: 'pkcs11' });
      const kcv = check.toString('hex').toUpperCase();
      record(version, 'create', `Key-encrypting key ${version} made in the HSM (pkcs11, KCV ${kcv})`);
      return { version, provider: 'pkcs11' as const, kcv };
    });
  }
}
