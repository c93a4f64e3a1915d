import { ConfigError, loadConfig } from './config/load-config';
import { EmbeddedDatabaseInUse } from './database/embedded-lock';
import { describeStartupFailure, failureDetails } from './startup-failure';

const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe('describeStartupFailure', () => {
  const config = loadConfig({
    DATABASE_URL: 'postgres://vault:pw-secret@db.internal:6543/vault',
    PORT: '8080',
  });

  it('names DATABASE_URL for a database that is absent, unreachable or refuses the credentials, never the password', () => {
    for (const error of [
      withCode('database "vault" does not exist', '3D000'),
      new AggregateError([withCode('connect ECONNREFUSED 127.0.0.1:6543', 'ECONNREFUSED')]),
      withCode('password authentication failed for user "vault"', '28P01'),
      new Error('wrapped', { cause: withCode('getaddrinfo ENOTFOUND db.internal', 'ENOTFOUND') }),
    ]) {
      const line = describeStartupFailure(error, config);
      expect(line).toContain('DATABASE_URL');
      expect(line).toContain('db.internal:6543/vault');
      expect(line).not.toContain('pw-secret');
      expect(line).not.toContain('\n');
    }
  });

  it('names PORT for a port in use, and passes configuration and lock messages through', () => {
    expect(describeStartupFailure(withCode('listen EADDRINUSE', 'EADDRINUSE'), config)).toMatch(
      /Port 8080 .*PORT/,
    );
    expect(describeStartupFailure(new ConfigError('ENCRYPTION_KEYS: required'), config)).toBe(
      'ENCRYPTION_KEYS: required',
    );
    const held = new EmbeddedDatabaseInUse({ pid: 42, role: 'server', since: '' }, '/srv/data');
    expect(describeStartupFailure(held)).toMatch(/\/srv\/data .*pid 42.*DATABASE_URL/);
  });

  it('keeps anything else to its first line, the stack for LOG_LEVEL=debug', () => {
    const error = new Error('something odd\nwith more lines');
    expect(describeStartupFailure(error)).toBe(
      'Failed to start: something odd (LOG_LEVEL=debug shows the details)',
    );
    expect(failureDetails(error)).toContain('at ');
  });
});
