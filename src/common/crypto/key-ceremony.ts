import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { split } from 'shamir-secret-sharing';
import { checkValue } from './master-key-checks';
import { KeyRecords } from './key-records';
import { MasterKeyChecksRepository } from './master-key-checks.repository';
import { checkLabel, shareLine } from './shares';

/** What a ceremony answers: the new key's version and check label, and one share line per custodian. */
export interface CeremonyResult {
  version: string;
  check: string;
  threshold: number;
  shares: string[];
}

/** The bounds of a ceremony: 2 <= threshold <= shares <= 16. */
export const MAX_SHARES = 16;

/**
 * `vault keys ceremony`: a new 256-bit key-encrypting key, split among `shares` custodians so that any
 * `threshold` of them open it (Shamir's secret sharing over GF(256), the `shamir-secret-sharing`
 * library). Only its version, check value and the split's shape are recorded (the next `v<N>` after
 * every version recorded, under the checks' lock); the key itself is returned to nobody and its bytes
 * are overwritten once split.
 */
@Injectable()
export class KeyCeremony {
  constructor(
    private readonly records: KeyRecords,
    private readonly checks: MasterKeyChecksRepository,
  ) {}

  async run(shares: number, threshold: number): Promise<CeremonyResult> {
    if (!Number.isInteger(shares) || !Number.isInteger(threshold) || threshold < 2 || threshold > shares)
      throw new RangeError(`a ceremony needs 2 <= threshold <= shares <= ${MAX_SHARES}`);
    if (shares > MAX_SHARES)
      throw new RangeError(`a ceremony needs 2 <= threshold <= shares <= ${MAX_SHARES}`);
    const key = randomBytes(32);
    try {
      const parts = await split(new Uint8Array(key), shares, threshold);
      const check = checkValue(key);
      return await this.records.transaction(async (change, record) => {
        await this.checks.lock(change);
        const numbers = (await this.checks.all(change)).map((c) => Number(c.version.slice(1)));
        const version = `v${Math.max(0, ...numbers) + 1}`;
        await this.checks.record(change, {
          version,
          checkValue: check,
          provider: 'split',
          threshold,
          shares,
        });
        const label = checkLabel(check);
        record(
          version,
          'create',
          `Key-encrypting key ${version} made by a ceremony, split into ${shares} shares of which ${threshold} open it (check ${label})`,
        );
        return {
          version,
          check: label,
          threshold,
          shares: parts.map((payload, i) =>
            shareLine({ version, check: label, index: i + 1, payload: Buffer.from(payload) }),
          ),
        };
      });
    } finally {
      key.fill(0);
    }
  }
}
