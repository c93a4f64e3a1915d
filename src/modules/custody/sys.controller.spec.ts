import { controllerApp, ControllerApp } from '../../../test/support/controller-app';
import { SealService } from './seal.service';
import { SysController } from './sys.controller';

describe('SysController (public: the custodians of a sealed server)', () => {
  const sealed = { sealed: true, progress: 1, threshold: 2, kek_version: 'v1' };
  const seal = { status: jest.fn(), enter: jest.fn(), reset: jest.fn() };
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([SysController], [{ provide: SealService, useValue: seal }]);
  });
  afterAll(() => ctx.close());
  beforeEach(() => {
    jest.clearAllMocks();
    seal.status.mockResolvedValue(sealed);
    seal.enter.mockResolvedValue(sealed);
    seal.reset.mockResolvedValue({ ...sealed, progress: 0 });
  });

  it('GET /sys/seal-status answers without a key', async () => {
    const res = await ctx.http.get('/sys/seal-status');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(sealed);
    expect(seal.status).toHaveBeenCalledTimes(1);
  });

  it('POST /sys/unseal hands the share and the client address to the service, 200', async () => {
    const res = await ctx.http.post('/sys/unseal').send({ share: 'vault-share-v1:line' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(sealed);
    expect(seal.enter).toHaveBeenCalledTimes(1);
    expect(seal.enter).toHaveBeenCalledWith('vault-share-v1:line', expect.stringMatching(/127\.0\.0\.1/));
  });

  it('POST /sys/unseal without a share (or with more than a line) is a 400 naming the field', async () => {
    for (const body of [{}, { share: 7 }, { share: 'x'.repeat(201) }]) {
      const res = await ctx.http.post('/sys/unseal').send(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(Object.keys(res.body.errors)).toEqual(['share']);
    }
    expect(seal.enter).not.toHaveBeenCalled();
  });

  it('POST /sys/unseal/reset forgets the shares entered, 200', async () => {
    const res = await ctx.http.post('/sys/unseal/reset');
    expect(res.status).toBe(200);
    expect(res.body.progress).toBe(0);
    expect(seal.reset).toHaveBeenCalledTimes(1);
  });
});
