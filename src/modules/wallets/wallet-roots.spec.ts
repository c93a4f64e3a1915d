import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/load-config';
import { WalletRoots } from './wallet-roots';

const roots = (config: Partial<AppConfig>) => new WalletRoots(config as AppConfig);

describe('WalletRoots', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wallet-roots-spec-'));

  it('defaults to the shipped Apple Root CA - G3, and to no Google keys (Google Pay then names its setting)', () => {
    const loaded = roots({});
    expect(loaded.apple.map((c) => c.subject)).toEqual([expect.stringContaining('CN=Apple Root CA - G3')]);
    expect(loaded.google).toBeUndefined();
  });

  it('stops the start on a file it cannot use, naming the setting and never the content', () => {
    writeFileSync(join(dir, 'empty.pem'), 'no certificate here: s3cr3t');
    expect(() => roots({ APPLE_PAY_ROOT_CA: join(dir, 'missing.pem') })).toThrow(ConfigError);
    expect(() => roots({ APPLE_PAY_ROOT_CA: join(dir, 'empty.pem') })).toThrow(
      /^APPLE_PAY_ROOT_CA: .* holds no PEM certificate$/,
    );
    writeFileSync(join(dir, 'bad.json'), '{"keys": "s3cr3t"}');
    expect(() => roots({ GOOGLE_PAY_ROOT_KEYS: join(dir, 'bad.json') })).toThrow(/GOOGLE_PAY_ROOT_KEYS/);
    expect(() => roots({ GOOGLE_PAY_ROOT_KEYS: join(dir, 'bad.json') })).not.toThrow(/s3cr3t/);
  });
});
