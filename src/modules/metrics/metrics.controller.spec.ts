import { Metrics } from '../../common/metrics/metrics';
import { controllerApp, ControllerApp } from '../../../test/support/controller-app';
import { MetricsController } from './metrics.controller';

describe('MetricsController (public, for a scraper)', () => {
  const metrics = { scrape: jest.fn().mockResolvedValue('vault_up 1\n') };
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([MetricsController], [{ provide: Metrics, useValue: metrics }]);
  });
  afterAll(() => ctx.close());

  it('GET /metrics answers the exposition without a key, never cached', async () => {
    const res = await ctx.http.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toBe('vault_up 1\n');
    expect(metrics.scrape).toHaveBeenCalledTimes(1);
    expect(metrics.scrape).toHaveBeenCalledWith();
  });
});
