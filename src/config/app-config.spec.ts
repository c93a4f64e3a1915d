import { ConfigError, loadConfig } from './load-config';
import { misspelledVariables } from './misspelled-variables';

describe('loadConfig', () => {
  it('applies defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      DATA_DIR: './data',
      LOG_LEVEL: 'info',
      BOOTSTRAP: true,
      LOG_RETENTION_DAYS: 365,
      WEBHOOK_POLL_MS: 1000,
      WEBHOOK_LEASE_SECONDS: 30,
      METRICS_ENABLED: false,
      HEAP_GROWTH_PERCENT: 50,
      DB_PREPARED_STATEMENTS: true,
      CARD_ENUMERATION_LIMIT: 10,
      SHUTDOWN_GRACE_MS: 25_000,
      SHUTDOWN_DRAIN_DELAY_MS: 3_000,
      PUBLIC_TOKENIZE_PER_MINUTE: 60,
    });
    expect(config.TRUST_PROXY).toBeUndefined();
    expect(config.embedded).toBe(true);
    expect(config.publicBaseUrl).toBe('http://localhost:3000');
  });

  it('reads and converts values', () => {
    const config = loadConfig({
      PORT: '8080',
      BOOTSTRAP: 'false',
      DATABASE_URL: 'postgres://u@h:5432/db',
      PUBLIC_BASE_URL: 'https://vault.example.com/',
      ENCRYPTION_KEYS: `v1:${Buffer.alloc(32, 1).toString('base64')},v2:${Buffer.alloc(32, 2).toString('base64')}`,
    });
    expect(config).toMatchObject({ PORT: 8080, BOOTSTRAP: false, DATABASE_URL: 'postgres://u@h:5432/db' });
    expect(loadConfig({ WEBHOOK_POLL_MS: '250', WEBHOOK_LEASE_SECONDS: '11' })).toMatchObject({
      WEBHOOK_POLL_MS: 250,
      WEBHOOK_LEASE_SECONDS: 11,
    });
    expect(loadConfig({ METRICS_ENABLED: 'true' }).METRICS_ENABLED).toBe(true);
    expect(loadConfig({ HEAP_GROWTH_PERCENT: '0' }).HEAP_GROWTH_PERCENT).toBe(0);
    expect(loadConfig({ SHUTDOWN_GRACE_MS: '0' }).SHUTDOWN_GRACE_MS).toBe(0);
    expect(loadConfig({ SHUTDOWN_DRAIN_DELAY_MS: '0' }).SHUTDOWN_DRAIN_DELAY_MS).toBe(0);
    expect(loadConfig({ DATABASE_LISTEN_URL: 'postgres://u@h:5432/db' }).DATABASE_LISTEN_URL).toBe(
      'postgres://u@h:5432/db',
    );
    expect(config.embedded).toBe(false);
    expect(config.publicBaseUrl).toBe('https://vault.example.com');
  });

  it('reads VENDOR_BASE_URLS by formula, without trailing slashes', () => {
    const config = loadConfig({
      VENDOR_BASE_URLS: 'stripe-card=http://127.0.0.1:12111/,adyen-card=http://127.0.0.1:4010/v71',
    });
    expect([...config.vendorBaseUrls]).toEqual([
      ['stripe-card', 'http://127.0.0.1:12111'],
      ['adyen-card', 'http://127.0.0.1:4010/v71'],
    ]);
    expect(loadConfig({}).vendorBaseUrls.size).toBe(0);
  });

  it('reads TRUST_PROXY: addresses and CIDR blocks, IPv4 and IPv6, spaces around entries allowed', () => {
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1' }).TRUST_PROXY).toBe('127.0.0.1');
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,::1,fd00::/8' }).TRUST_PROXY).toBe(
      '10.0.0.0/8, 192.168.1.7,::1,fd00::/8',
    );
    expect(loadConfig({ TRUST_PROXY: '' }).TRUST_PROXY).toBeUndefined();
    expect(loadConfig({ PUBLIC_TOKENIZE_PER_MINUTE: '5' }).PUBLIC_TOKENIZE_PER_MINUTE).toBe(5);
  });

  it('treats an empty DATABASE_URL as unset', () => {
    expect(loadConfig({ DATABASE_URL: '' }).embedded).toBe(true);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://localhost/x'],
    ['DATABASE_LISTEN_URL', 'http://localhost/x'],
    ['SHUTDOWN_GRACE_MS', '-1'],
    ['SHUTDOWN_DRAIN_DELAY_MS', '-1'],
    ['SHUTDOWN_DRAIN_DELAY_MS', '61000'],
    ['LOG_LEVEL', 'loud'],
    ['BOOTSTRAP', 'maybe'],
    ['ENCRYPTION_KEYS', 'v1:short'],
    ['PUBLIC_BASE_URL', 'not a url'],
    ['LOG_RETENTION_DAYS', '0'],
    ['RATE_LIMIT_PER_MINUTE', '-5'],
    ['CARD_ENUMERATION_LIMIT', '0'],
    ['CARD_ENUMERATION_LIMIT', 'many'],
    ['DB_POOL_SIZE', '1000'],
    ['NODE_ENV', 'staging'],
    ['WEBHOOK_POLL_MS', '5'],
    ['WEBHOOK_LEASE_SECONDS', '10'],
    ['WEBHOOK_LEASE_SECONDS', 'soon'],
    ['METRICS_ENABLED', 'yes'],
    ['HEAP_GROWTH_PERCENT', '-1'],
    ['HEAP_GROWTH_PERCENT', 'small'],
    ['DB_PREPARED_STATEMENTS', 'sometimes'],
    ['VENDOR_BASE_URLS', 'stripe-card'],
    ['VENDOR_BASE_URLS', 'stripe-card=ftp://127.0.0.1'],
    ['VENDOR_BASE_URLS', 'stripe-card=http://127.0.0.1:12111,'],
    ['TRUST_PROXY', 'balancer.internal'],
    ['TRUST_PROXY', '127.0.0.1,'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.0/'],
    ['TRUST_PROXY', '300.0.0.1'],
    ['TRUST_PROXY', '0x7f.1'],
    ['TRUST_PROXY', '*'],
    ['PUBLIC_TOKENIZE_PER_MINUTE', '0'],
    ['PUBLIC_TOKENIZE_PER_MINUTE', 'lots'],
  ])('rejects %s=%s with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`\\b${name}\\b`));
  });

  it.each(['notaport', '1.5', '-1', '70000'])(
    'PORT=%s is one line: what PORT must be, its range, not the value',
    (value) => {
      expect(() => loadConfig({ PORT: value })).toThrow(
        new ConfigError('Invalid configuration: PORT must be an integer from 0 to 65535.'),
      );
    },
  );

  it('names each bad variable on a line of its own', () => {
    expect(() => loadConfig({ PORT: 'x', LOG_LEVEL: 'loud' })).toThrow(
      /^Invalid configuration: (PORT|LOG_LEVEL) .*\.\nInvalid configuration: (PORT|LOG_LEVEL) .*\.$/,
    );
  });
});

describe('misspelledVariables', () => {
  it('names a variable one or two letters away from one the service reads, and that one', () => {
    expect(misspelledVariables({ DATABASE_ULR: 'postgres://h/db' })).toEqual([
      'Warning: the environment variable DATABASE_ULR is not read by the service; did you mean DATABASE_URL?',
    ]);
    expect(misspelledVariables({ ENCRYPTION_KEY: 'x' })).toEqual([
      expect.stringContaining('ENCRYPTION_KEY is not read by the service; did you mean ENCRYPTION_KEYS?'),
    ]);
    expect(misspelledVariables({ port: '8080' })).toEqual([expect.stringContaining('did you mean PORT?')]);
    expect(misspelledVariables({ LOGLEVEL: 'debug' })).toEqual([expect.stringContaining('LOG_LEVEL')]);
  });

  it('is silent about the variables it reads and about unrelated ones', () => {
    expect(
      misspelledVariables({
        DATABASE_URL: 'postgres://h/db',
        PORT: '1',
        PATH: '/usr/bin',
        TERM: 'xterm',
        HOME: '/root',
        PWD: '/',
        USER: 'root',
        NODE_OPTIONS: '',
        HOSTNAME: 'x',
        SHLVL: '1',
      }),
    ).toEqual([]);
  });

  it('says nothing about the values', () => {
    const [warning] = misspelledVariables({ ENCRYPTON_KEYS: 'v1:secret' });
    expect(warning).not.toContain('secret');
  });
});
