import { controllerApp, ControllerApp, fakeOf } from '../../../test/support/controller-app';
import { ElementsController } from './elements.controller';
import { ElementsException } from './elements.errors';
import { ElementsService } from './elements.service';

const APP = '11111111-1111-4111-8111-111111111111';
const PAGE = {
  html: '<!doctype html><title>Card details</title>',
  contentSecurityPolicy: "default-src 'none'; frame-ancestors https://shop.example",
};

describe('ElementsController', () => {
  let ctx: ControllerApp;
  const elements = fakeOf<ElementsService>(['frame', 'asset']);

  beforeAll(async () => {
    ctx = await controllerApp([ElementsController], [{ provide: ElementsService, useValue: elements }]);
  });
  afterAll(() => ctx.close());
  beforeEach(() => jest.clearAllMocks());

  describe('GET /elements/v1/frame.html', () => {
    it('needs no key; answers the page with its policy, revalidated on every load', async () => {
      elements.frame.mockResolvedValue(PAGE);
      const res = await ctx.http.get(`/elements/v1/frame.html?application_id=${APP}&element=card`);
      expect(elements.frame).toHaveBeenCalledWith(APP, 'card');
      expect(res.status).toBe(200);
      expect(res.text).toBe(PAGE.html);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toBe(PAGE.contentSecurityPolicy);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['x-frame-options']).toBeUndefined();
    });

    it('hands the query over as it came (absent, repeated)', async () => {
      elements.frame.mockResolvedValue(PAGE);
      await ctx.http.get('/elements/v1/frame.html?element=card&element=cvc');
      expect(elements.frame).toHaveBeenCalledWith(undefined, ['card', 'cvc']);
    });

    it('an unknown element: a 404 problem', async () => {
      elements.frame.mockRejectedValue(ElementsException.notFound('Element'));
      const res = await ctx.http.get('/elements/v1/frame.html?element=password');
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.body).toMatchObject({ status: 404, code: 'not_found', detail: 'Element not found' });
      expect(res.headers['content-security-policy']).toBeUndefined();
    });
  });

  describe('GET /elements/v1/:file', () => {
    it('needs no key; answers the file: public, cacheable, readable from any origin', async () => {
      elements.asset.mockReturnValue({
        content: Buffer.from('export {};'),
        contentType: 'text/javascript; charset=utf-8',
      });
      const res = await ctx.http.get('/elements/v1/elements.mjs');
      expect(elements.asset).toHaveBeenCalledWith('elements.mjs');
      expect(res.status).toBe(200);
      expect(res.text).toBe('export {};');
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.headers['cache-control']).toBe('public, max-age=300');
      expect(res.headers['cross-origin-resource-policy']).toBe('cross-origin');
      expect(res.headers['access-control-allow-origin']).toBe('*');
    });

    it.each([
      [ElementsException.notFound('File'), 404, 'not_found', 'File not found'],
      [
        ElementsException.notBuilt(),
        503,
        'elements_not_built',
        'The card elements are not built on this server.',
      ],
    ])('%s: a problem, no caching headers', async (refusal, status, code, detail) => {
      elements.asset.mockImplementation(() => {
        throw refusal;
      });
      const res = await ctx.http.get('/elements/v1/frame.js');
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ status, code, detail });
      expect(res.headers['cache-control']).not.toBe('public, max-age=300');
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });
  });
});
