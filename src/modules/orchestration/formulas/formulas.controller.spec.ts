import { controllerApp, ControllerApp } from '../../../../test/support/controller-app';
import { FormulasController } from './formulas.controller';
import { FORMULAS } from './formulas';

describe('FormulasController', () => {
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([FormulasController]);
  });
  afterAll(() => ctx.close());

  const routes = [
    ['get', '/orchestration/connection_formulas'],
    ['post', '/orchestration/connection_formulas'],
    ['get', '/orchestration/connection/formulas'],
    ['post', '/orchestration/connection/formulas'],
  ] as const;

  it.each(routes)('%s %s: 401 without a key', async (method, path) => {
    expect((await ctx.http[method](path)).status).toBe(401);
  });

  it.each(routes)('%s %s: 403 without orchestration:connection_formulas', async (method, path) => {
    const res = await ctx.http[method](path).set('BT-API-KEY', ctx.key('private', ['token:read']));
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('orchestration:connection_formulas');
  });

  it.each(routes)('%s %s: the catalog', async (method, path) => {
    const res = await ctx.http[method](path).set(
      'BT-API-KEY',
      ctx.key('private', ['orchestration:connection_formulas']),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual(JSON.parse(JSON.stringify(FORMULAS)));
  });
});
