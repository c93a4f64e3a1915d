import { ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ShutdownState } from '../../common/lifecycle/shutdown-state';
import { AppConfig } from '../../config/app-config';
import { ChangeNotifications } from '../../database/change-notifications';
import { controllerApp, ControllerApp } from '../../../test/support/controller-app';
import { HealthController } from './health.controller';

describe('HealthController (public)', () => {
  const health = { check: jest.fn() };
  const database = { pingCheck: jest.fn() };
  const shutdown = { ready: true };
  const notifications = { listening: true };
  const config = { DATABASE_URL: 'postgres://db.internal/vault' as string | undefined };
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [HealthController],
      [
        { provide: HealthCheckService, useValue: health },
        { provide: TypeOrmHealthIndicator, useValue: database },
        HealthIndicatorService,
        { provide: ShutdownState, useValue: shutdown },
        { provide: ChangeNotifications, useValue: notifications },
        { provide: AppConfig, useValue: config },
      ],
    );
  });
  afterAll(() => ctx.close());
  beforeEach(() => {
    jest.clearAllMocks();
    shutdown.ready = true;
    notifications.listening = true;
    config.DATABASE_URL = 'postgres://db.internal/vault';
    // As Terminus does: a check that is down makes the answer a 503 with every check's details.
    health.check.mockImplementation(async (checks: (() => unknown)[]) => {
      const details = Object.assign({}, ...(await Promise.all(checks.map((check) => check())))) as Record<
        string,
        { status: string }
      >;
      const down = Object.values(details).some((d) => d.status === 'down');
      const result = { status: down ? 'error' : 'ok', details };
      if (down) throw new ServiceUnavailableException(result);
      return result;
    });
  });

  it('GET /health/live answers without a key and checks nothing', async () => {
    const res = await ctx.http.get('/health/live');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', details: {} });
    expect(health.check).toHaveBeenCalledTimes(1);
    expect(health.check).toHaveBeenCalledWith([]);
    expect(database.pingCheck).not.toHaveBeenCalled();
  });

  it('GET /health/ready answers without a key and pings the database', async () => {
    database.pingCheck.mockResolvedValueOnce({ database: { status: 'up' } });
    const res = await ctx.http.get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      details: { database: { status: 'up' }, notifications: { status: 'up', listening: true } },
    });
    // A bounded ping: a database that hangs makes the instance not ready rather than the probe hang.
    expect(database.pingCheck).toHaveBeenCalledTimes(1);
    expect(database.pingCheck).toHaveBeenCalledWith('database', { timeout: 3000 });
  });

  it('GET /health/ready is down, without asking the database, once the server is stopping', async () => {
    shutdown.ready = false;
    const res = await ctx.http.get('/health/ready');
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(database.pingCheck).not.toHaveBeenCalled();
    // Liveness does not change.
    expect((await ctx.http.get('/health/live')).status).toBe(200);
  });

  it('GET /health/ready is 503 when the database does not answer', async () => {
    database.pingCheck.mockResolvedValueOnce({ database: { status: 'down', message: 'timeout' } });
    const res = await ctx.http.get('/health/ready');
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 503, title: 'Service Unavailable' });
  });

  it('GET /health/ready shows whether change notifications listen, without making it a condition', async () => {
    database.pingCheck
      .mockResolvedValueOnce({ database: { status: 'up' } })
      .mockResolvedValueOnce({ database: { status: 'up' } });
    notifications.listening = false;
    const lost = await ctx.http.get('/health/ready');
    expect(lost.status).toBe(200);
    expect(lost.body.details.notifications).toEqual({ status: 'up', listening: false });
    // The embedded database has no connection to listen on: nothing to show.
    config.DATABASE_URL = undefined;
    const embedded = await ctx.http.get('/health/ready');
    expect(embedded.body.details).toEqual({ database: { status: 'up' } });
  });

  it('ignores a key given, even one that is not valid', async () => {
    const res = await ctx.http.get('/health/live').set('BT-API-KEY', 'nonsense');
    expect(res.status).toBe(200);
  });
});
