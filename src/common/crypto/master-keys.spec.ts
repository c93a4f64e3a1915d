import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../config/load-config';
import { checkMasterKeys, KEY_FILE_NAME, loadMasterKeys, parseMasterKeys } from './master-keys';

const b64 = () => randomBytes(32).toString('base64');

describe('master keys', () => {
  it('parses versions and makes the last one active', () => {
    const ring = loadMasterKeys(loadConfig({ ENCRYPTION_KEYS: `v1:${b64()},v2:${b64()}` }), () => undefined);
    expect(ring.active.version).toBe('v2');
    expect(ring.get('v1')).toHaveLength(32);
    expect(ring.get('v3')).toBeUndefined();
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
      expect(second.active.key.equals(first.active.key)).toBe(true);
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
