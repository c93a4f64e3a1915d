import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/app-config';

export interface MasterKey {
  version: string;
  key: Buffer;
}

/** Versioned master keys: the last one wraps new tenant keys, every one of them still unwraps. */
export class MasterKeyRing {
  private readonly byVersion: Map<string, Buffer>;

  constructor(
    readonly keys: MasterKey[],
    /** Where the keys came from, for the start-up log (never the keys themselves). */
    readonly source: string,
  ) {
    if (keys.length === 0) throw new ConfigError('ENCRYPTION_KEYS: at least one master key is needed');
    this.byVersion = new Map(keys.map((k) => [k.version, k.key]));
    if (this.byVersion.size !== keys.length)
      throw new ConfigError('ENCRYPTION_KEYS: key versions must be unique');
  }

  get active(): MasterKey {
    return this.keys[this.keys.length - 1];
  }

  /** The key of a version, or undefined for a version this ring does not hold (fail closed). */
  get(version: string): Buffer | undefined {
    return this.byVersion.get(version);
  }
}

/** Parses `v1:<base64 32 bytes>,v2:...`. */
export function parseMasterKeys(value: string): MasterKey[] {
  return value.split(',').map((part) => {
    const [version, encoded] = part.split(':');
    const key = Buffer.from(encoded ?? '', 'base64');
    if (!/^v\d+$/.test(version) || key.length !== 32) {
      throw new ConfigError(`ENCRYPTION_KEYS: "${version}" must be v<N>:<base64 of exactly 32 bytes>`);
    }
    return { version, key };
  });
}

export const KEY_FILE_NAME = 'master-keys';

/**
 * The master keys of this process: ENCRYPTION_KEYS when set; otherwise, outside production, a key file
 * generated once into DATA_DIR (mode 0600). In production, no keys is a refusal to start.
 */
export function loadMasterKeys(config: AppConfig, warn: (message: string) => void): MasterKeyRing {
  if (config.ENCRYPTION_KEYS)
    return new MasterKeyRing(parseMasterKeys(config.ENCRYPTION_KEYS), 'ENCRYPTION_KEYS');
  if (config.NODE_ENV === 'production') {
    throw new ConfigError('ENCRYPTION_KEYS: required when NODE_ENV=production (v1:<base64 of 32 bytes>)');
  }
  const dir = resolve(config.DATA_DIR);
  const file = join(dir, KEY_FILE_NAME);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(file, `v1:${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    warn(
      `ENCRYPTION_KEYS is not set: generated a master key into ${file}. Set ENCRYPTION_KEYS in production.`,
    );
  }
  chmodSync(file, 0o600);
  return new MasterKeyRing(parseMasterKeys(readFileSync(file, 'utf8').trim()), file);
}
