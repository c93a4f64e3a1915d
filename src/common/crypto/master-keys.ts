import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/load-config';
import { ProblemException } from '../errors/problem.exception';
import { type KeyEncryptionKey, type KeyProviderName, MemoryKek } from './key-encryption-key';
import { Pkcs11Device } from './pkcs11/pkcs11-device';

export interface MasterKey {
  version: string;
  key: Buffer;
}

/**
 * Answered for any use of the master keys while a `split` server waits for its custodians' shares: every
 * API route but liveness, readiness and `/sys/*` answers it before it runs.
 */
export class SealedError extends ProblemException {
  constructor() {
    super(
      503,
      'The vault is sealed: its key-encrypting key is split among custodians, and as many of them as its ' +
        'threshold must each enter a share (`vault unseal`) before this instance serves.',
      { code: 'sealed' },
    );
  }
}

interface Held {
  keys: KeyEncryptionKey[];
  byVersion: Map<string, KeyEncryptionKey>;
}

const isKek = (key: MasterKey | KeyEncryptionKey): key is KeyEncryptionKey => 'wrap' in key;

function hold(given: (MasterKey | KeyEncryptionKey)[]): Held {
  if (given.length === 0) throw new ConfigError('ENCRYPTION_KEYS: at least one master key is needed');
  const keys = given.map((k) => (isKek(k) ? k : new MemoryKek(k.version, k.key)));
  const byVersion = new Map(keys.map((k) => [k.version, k]));
  if (byVersion.size !== keys.length) throw new ConfigError('ENCRYPTION_KEYS: key versions must be unique');
  return { keys, byVersion };
}

/**
 * Versioned key-encrypting keys: the last one wraps new tenant keys, every one of them still unwraps.
 * Each is in memory (`env`, `split`) or in an HSM (`pkcs11`, KeyEncryptionKey). A ring made `sealed`
 * (KEY_PROVIDER=split) holds no key until `unseal` gives it the one its custodians' shares open; until
 * then every use throws `SealedError`.
 */
export class MasterKeyRing {
  private held: Held | undefined;
  private readonly waiting: (() => void)[] = [];
  private readonly listeners: (() => void)[] = [];

  constructor(
    keys: (MasterKey | KeyEncryptionKey)[] | 'sealed',
    /** Where the keys came from, for the start-up log (never the keys themselves). */
    readonly source: string,
    /** Who holds them, as `master_key_checks` records it. */
    readonly provider: KeyProviderName = keys === 'sealed' ? 'split' : 'env',
    /** Under `pkcs11`: the HSM holding the keys (to make a new version, count its calls, close it). */
    readonly device?: Pkcs11Device,
  ) {
    if (keys !== 'sealed') this.held = hold(keys);
  }

  get sealed(): boolean {
    return this.held === undefined;
  }

  get keys(): KeyEncryptionKey[] {
    return this.holding().keys;
  }

  get active(): KeyEncryptionKey {
    const keys = this.holding().keys;
    return keys[keys.length - 1];
  }

  /** The key of a version, or undefined for a version this ring does not hold (fail closed). */
  get(version: string): KeyEncryptionKey | undefined {
    return this.holding().byVersion.get(version);
  }

  /**
   * Adds a key that becomes the active one, in this process only: a change of provider (`vault keys
   * rotate --to`, servers stopped) re-wraps everything under the new provider's key while the old ones
   * are still there to unwrap; a split server adopts a newer ceremony's key its custodians opened.
   */
  adopt(key: KeyEncryptionKey): void {
    const held = this.holding();
    if (held.byVersion.has(key.version)) throw new Error(`the ring already holds ${key.version}`);
    this.held = hold([...held.keys, key]);
    for (const run of this.listeners) run();
  }

  /** Gives a sealed ring its keys, then runs what waited for them (`whenUnsealed`), in order. */
  unseal(keys: MasterKey[]): void {
    if (!this.sealed) throw new Error('the master key ring is not sealed');
    this.held = hold(keys);
    for (const run of this.waiting.splice(0)) run();
    for (const run of this.listeners) run();
  }

  /** Runs `run` each time the keys held change (unsealed, a key adopted): the heartbeat tells at once. */
  onChange(run: () => void): void {
    this.listeners.push(run);
  }

  /** Runs `run` once the ring holds its keys: now, or when it is unsealed. */
  whenUnsealed(run: () => void): void {
    if (this.sealed) this.waiting.push(run);
    else run();
  }

  private holding(): Held {
    if (!this.held) throw new SealedError();
    return this.held;
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

const HOW_TO_MAKE_ONE = 'for example ENCRYPTION_KEYS=v1:$(openssl rand -base64 32)';

/**
 * The master keys ENCRYPTION_KEYS gives (a sealed ring under KEY_PROVIDER=split), or undefined when a key
 * file may stand in for them (the embedded database outside production); a ConfigError when they are
 * required and missing, or malformed. Reads
 * nothing and writes nothing: the server and the CLI call it before they open the database, so that a
 * refusal for want of keys leaves the database untouched (no migration run).
 */
export function checkMasterKeys(config: AppConfig): MasterKeyRing | undefined {
  if (config.KEY_PROVIDER === 'pkcs11') return pkcs11Ring(config);
  if (config.KEY_PROVIDER === 'split') {
    if (config.ENCRYPTION_KEYS)
      throw new ConfigError(
        "ENCRYPTION_KEYS: must not be set with KEY_PROVIDER=split (the key is opened by custodians' shares; docs/keys.md)",
      );
    return new MasterKeyRing('sealed', 'KEY_PROVIDER=split');
  }
  if (config.ENCRYPTION_KEYS)
    return new MasterKeyRing(parseMasterKeys(config.ENCRYPTION_KEYS), 'ENCRYPTION_KEYS');
  if (config.NODE_ENV === 'production') {
    throw new ConfigError(`ENCRYPTION_KEYS: required when NODE_ENV=production (${HOW_TO_MAKE_ONE})`);
  }
  if (!config.embedded) {
    throw new ConfigError(
      `ENCRYPTION_KEYS: required when DATABASE_URL is set, and the same on every server and CLI using that database (${HOW_TO_MAKE_ONE}). No key file is generated for a shared database.`,
    );
  }
  return undefined;
}

/** The first line of PKCS11_PIN_FILE; a file that cannot be read is named, its content never. */
function readPinFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n')[0].trimEnd();
  } catch {
    throw new ConfigError(`PKCS11_PIN_FILE: ${file} cannot be read`);
  }
}

/** The HSM the PKCS11_* settings name (checked first by `checkPkcs11Settings`). */
export function pkcs11Device(config: AppConfig): Pkcs11Device {
  return Pkcs11Device.of({
    module: config.PKCS11_MODULE!,
    tokenLabel: config.PKCS11_TOKEN_LABEL!,
    pin: config.PKCS11_PIN ?? readPinFile(config.PKCS11_PIN_FILE!),
    keyLabel: config.PKCS11_KEY_LABEL,
  });
}

/** The PKCS11_* settings the HSM needs, refused by name when missing or contradictory. */
export function checkPkcs11Settings(config: AppConfig): void {
  const missing: string[] = (['PKCS11_MODULE', 'PKCS11_TOKEN_LABEL'] as const).filter(
    (name) => !config[name],
  );
  if (!config.PKCS11_PIN && !config.PKCS11_PIN_FILE) missing.push('PKCS11_PIN');
  if (missing.length)
    throw new ConfigError(
      `${missing.join(', ')}: required with KEY_PROVIDER=pkcs11 (the PIN as PKCS11_PIN or PKCS11_PIN_FILE; docs/keys.md)`,
    );
  if (config.PKCS11_PIN && config.PKCS11_PIN_FILE)
    throw new ConfigError('PKCS11_PIN_FILE: set PKCS11_PIN or PKCS11_PIN_FILE, not both');
}

/**
 * The key-encrypting keys in the HSM (KEY_PROVIDER=pkcs11): every AES key of the token labelled
 * `<PKCS11_KEY_LABEL>-v<N>`, the highest version active. A token with none yet gives the CLI a ring that
 * holds nothing (`vault keys ceremony --provider pkcs11` makes the first) and stops a server, naming the command.
 */
function pkcs11Ring(config: AppConfig): MasterKeyRing {
  if (config.ENCRYPTION_KEYS)
    throw new ConfigError(
      'ENCRYPTION_KEYS: must not be set with KEY_PROVIDER=pkcs11 (the keys are in the HSM; docs/keys.md)',
    );
  checkPkcs11Settings(config);
  const device = pkcs11Device(config);
  const source = `KEY_PROVIDER=pkcs11 (token "${config.PKCS11_TOKEN_LABEL}")`;
  let versions: string[];
  try {
    versions = device.versions();
  } catch {
    throw new ConfigError(
      `KEY_PROVIDER=pkcs11: could not open the token "${config.PKCS11_TOKEN_LABEL}" through ${config.PKCS11_MODULE} (${device.lastFailure ?? 'no answer'})`,
    );
  }
  if (versions.length === 0) {
    if (config.role === 'cli') return new MasterKeyRing('sealed', source, 'pkcs11', device);
    throw new ConfigError(
      `KEY_PROVIDER=pkcs11: the token "${config.PKCS11_TOKEN_LABEL}" holds no key labelled ${config.PKCS11_KEY_LABEL}-v<N>; make one with \`vault keys ceremony --provider pkcs11\` (docs/keys.md)`,
    );
  }
  return new MasterKeyRing(
    versions.map((version) => device.key(version)),
    source,
    'pkcs11',
    device,
  );
}

/**
 * The master keys of this process: ENCRYPTION_KEYS when set; otherwise, with the embedded database
 * outside production, a key file generated once into DATA_DIR (mode 0600) beside that database. With
 * DATABASE_URL (a server other processes share) or in production, no keys is a refusal to start: a key
 * generated by one process would wrap tenant keys that every other process fails to open.
 */
export function loadMasterKeys(config: AppConfig, warn: (message: string) => void): MasterKeyRing {
  const given = checkMasterKeys(config);
  if (given && !given.sealed && config.NODE_ENV === 'production')
    warn(
      'KEY_PROVIDER=env: the master key is in the environment (ENCRYPTION_KEYS). PCI DSS 3.6.1.2 asks for a ' +
        'key-encrypting key kept as split knowledge or in a secure cryptographic device: KEY_PROVIDER=split ' +
        "(custodians' shares) or KEY_PROVIDER=pkcs11 (an HSM). See docs/keys.md.",
    );
  if (given) return given;
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
