import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DecryptionError } from './aead';
import { ConfigError, loadConfig } from '../../config/load-config';
import { checkMasterKeys, KEY_FILE_NAME, loadMasterKeys, parseMasterKeys } from './master-keys';

const b64 = () => randomBytes(32).toString('base64');

describe('master keys', () => {
  it('parses versions and makes the last one active', () => {
    const ring = loadMasterKeys(loadConfig({ ENCRYPTION_KEYS: `v1:${b64()},v2:${b64()}` }), () => undefined);
    expect(ring.active.version).toBe('v2');
    expect(ring.get('v1')?.version).toBe('v1');
    // Each version wraps and unwraps in memory; one version's wrapping does not open under another.
    const wrapped = ring.get('v1')!.wrap(Buffer.alloc(32, 3), 'tenant-key:t');
    expect(ring.get('v1')!.unwrap(wrapped, 'tenant-key:t')).toEqual(Buffer.alloc(32, 3));
    expect(() => ring.get('v2')!.unwrap(wrapped, 'tenant-key:t')).toThrow(DecryptionError);
    expect(ring.get('v3')).toBeUndefined();
  });

  it('KEY_PROVIDER=pkcs11 refuses ENCRYPTION_KEYS beside it and names what it lacks, before loading any module', () => {
    expect(() =>
      checkMasterKeys(loadConfig({ KEY_PROVIDER: 'pkcs11', ENCRYPTION_KEYS: `v1:${b64()}` })),
    ).toThrow(/ENCRYPTION_KEYS: must not be set with KEY_PROVIDER=pkcs11/);
    expect(() =>
      checkMasterKeys(loadConfig({ KEY_PROVIDER: 'pkcs11', PKCS11_TOKEN_LABEL: 'vault' })),
    ).toThrow(
      'PKCS11_MODULE, PKCS11_PIN: required with KEY_PROVIDER=pkcs11 (the PIN as PKCS11_PIN or PKCS11_PIN_FILE; docs/keys.md)',
    );
    expect(
      () =>
        checkMasterKeys(
          loadConfig({
            KEY_PROVIDER: 'pkcs11',
            PKCS11_MODULE: '/nowhere/libpkcs11.so',
            PKCS11_TOKEN_LABEL: 'vault',
            PKCS11_PIN: 'secret-pin-1234',
          }),
        ),
      // (or, where the optional binding did not build, that it is missing)
    ).toThrow(
      /^(PKCS11_MODULE: the PKCS#11 module \/nowhere\/libpkcs11.so could not be loaded|KEY_PROVIDER=pkcs11: the pkcs11js package is not installed)/,
    );
    expect(() => loadConfig({ PKCS11_KEY_LABEL: 'bad label!' })).toThrow(/PKCS11_KEY_LABEL must be/);
    const both = { KEY_PROVIDER: 'pkcs11', PKCS11_MODULE: '/m.so', PKCS11_TOKEN_LABEL: 'vault' };
    expect(() =>
      checkMasterKeys(loadConfig({ ...both, PKCS11_PIN: '1234', PKCS11_PIN_FILE: '/run/pin' })),
    ).toThrow('PKCS11_PIN_FILE: set PKCS11_PIN or PKCS11_PIN_FILE, not both');
    expect(() => checkMasterKeys(loadConfig({ ...both, PKCS11_PIN_FILE: '/nowhere/pin' }))).toThrow(
      'PKCS11_PIN_FILE: /nowhere/pin cannot be read',
    );
  });

  it('rejects duplicate versions', () => {
    expect(() =>
      loadMasterKeys(loadConfig({ ENCRYPTION_KEYS: `v1:${b64()},v1:${b64()}` }), () => undefined),
    ).toThrow(ConfigError);
    expect(() => parseMasterKeys('v1:AAAA')).toThrow(/32 bytes/);
  });

  it('warns in production that the key is in the environment, naming the other provider; not under split', () => {
    const warnings: string[] = [];
    loadMasterKeys(loadConfig({ NODE_ENV: 'production', ENCRYPTION_KEYS: `v1:${b64()}` }), (m) =>
      warnings.push(m),
    );
    expect(warnings).toEqual([expect.stringMatching(/^KEY_PROVIDER=env: .*KEY_PROVIDER=split/)]);
    loadMasterKeys(loadConfig({ ENCRYPTION_KEYS: `v1:${b64()}` }), (m) => warnings.push(m));
    const sealed = loadMasterKeys(loadConfig({ NODE_ENV: 'production', KEY_PROVIDER: 'split' }), (m) =>
      warnings.push(m),
    );
    expect(sealed.sealed).toBe(true);
    expect(warnings).toHaveLength(1);
  });

  it('refuses ENCRYPTION_KEYS beside KEY_PROVIDER=split', () => {
    expect(() =>
      loadMasterKeys(loadConfig({ KEY_PROVIDER: 'split', ENCRYPTION_KEYS: `v1:${b64()}` }), () => undefined),
    ).toThrow(/must not be set with KEY_PROVIDER=split/);
  });

  it('refuses to start in production without keys', () => {
    expect(() => loadMasterKeys(loadConfig({ NODE_ENV: 'production' }), () => undefined)).toThrow(
      /ENCRYPTION_KEYS/,
    );
  });

  it('never generates a key file for DATABASE_URL (a database other processes share)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vault-keys-'));
    try {
      expect(() =>
        loadMasterKeys(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://db/vault' }), () => undefined),
      ).toThrow(/ENCRYPTION_KEYS: required when DATABASE_URL is set/);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('generates a key file (mode 0600) into DATA_DIR once, with a warning, and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vault-keys-'));
    try {
      const warnings: string[] = [];
      const first = loadMasterKeys(loadConfig({ DATA_DIR: dir }), (m) => warnings.push(m));
      const file = join(dir, KEY_FILE_NAME);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(warnings).toHaveLength(1);
      const second = loadMasterKeys(loadConfig({ DATA_DIR: dir }), (m) => warnings.push(m));
      expect(second.active.checkValue().equals(first.active.checkValue())).toBe(true);
      expect(warnings).toHaveLength(1);
      expect(readFileSync(file, 'utf8')).toMatch(/^v1:/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('checkMasterKeys (run before the database is opened) refuses as loadMasterKeys does, writing nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vault-keys-'));
    try {
      expect(() =>
        checkMasterKeys(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://db/vault' })),
      ).toThrow(/ENCRYPTION_KEYS: required when DATABASE_URL is set/);
      expect(() => checkMasterKeys(loadConfig({ NODE_ENV: 'production', DATA_DIR: dir }))).toThrow(
        ConfigError,
      );
      expect(() => checkMasterKeys(loadConfig({ ENCRYPTION_KEYS: `v1:${b64()},v1:${b64()}` }))).toThrow(
        ConfigError,
      );
      // The embedded database outside production: a key file will stand in, made later by loadMasterKeys.
      expect(checkMasterKeys(loadConfig({ DATA_DIR: dir }))).toBeUndefined();
      expect(checkMasterKeys(loadConfig({ ENCRYPTION_KEYS: `v1:${b64()}` }))?.active.version).toBe('v1');
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
