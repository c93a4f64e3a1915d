import { HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { controllerApp, ControllerApp } from '../../../test/support/controller-app';
import { HealthController } from './health.controller';

describe('HealthController (public)', () => {
  const health = { check: jest.fn() };
  const database = { pingCheck: jest.fn() };
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [HealthController],
      [
        { provide: HealthCheckService, useValue: health },
        { provide: TypeOrmHealthIndicator, useValue: database },
      ],
    );
  });
  afterAll(() => ctx.close());
  beforeEach(() => {
    jest.clearAllMocks();
    health.check.mockImplementation(async (checks: (() => unknown)[]) => {
      for (const check of checks) await check();
      return { status: 'ok', info: {}, error: {}, details: {} };
    });
  });

  it('GET /health/live answers without a key and checks nothing', async () => {
    const res = await ctx.http.get('/health/live');
    expect(res.status).toBe(200);
    expect(health.check).toHaveBeenCalledTimes(1);
    expect(database.pingCheck).not.toHaveBeenCalled();
  });

  it('GET /health/ready answers without a key and pings the database', async () => {
    const res = await ctx.http.get('/health/ready');
    expect(res.status).toBe(200);
    expect(database.pingCheck).toHaveBeenCalledTimes(1);
  });

  it('ignores a key given, even one that is not valid', async () => {
    const res = await ctx.http.get('/health/live').set('BT-API-KEY', 'nonsense');
    expect(res.status).toBe(200);
  });
});
