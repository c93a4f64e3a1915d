import { ApplicationsService } from '../applications/applications.service';
import { ElementAssets } from './element-assets';
import { ElementsErrorCode, ElementsException } from './elements.errors';
import { ElementsService } from './elements.service';

const APP = '11111111-1111-4111-8111-11111111111A';

describe('ElementsService', () => {
  const allowedOriginsOf = jest.fn();
  const get = jest.fn();
  const service = new ElementsService(
    { get } as unknown as ElementAssets,
    { allowedOriginsOf } as unknown as ApplicationsService,
  );

  beforeEach(() => {
    allowedOriginsOf.mockReset();
    get.mockReset();
  });

  const refusal = async (work: () => unknown): Promise<ElementsErrorCode> => {
    const error: unknown = await Promise.resolve()
      .then(work)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ElementsException);
    return (error as ElementsException).code;
  };

  describe('frame', () => {
    it("is embeddable by the application's allowed origins only, named in its document", async () => {
      allowedOriginsOf.mockResolvedValue(['https://shop.example', 'https://pay.example']);
      const page = await service.frame(APP, 'cardNumber');
      expect(allowedOriginsOf).toHaveBeenCalledWith(APP.toLowerCase());
      expect(page.contentSecurityPolicy).toContain(
        'frame-ancestors https://shop.example https://pay.example;',
      );
      expect(page.html).toContain(
        '<meta name="vault-allowed-origins" content="https://shop.example https://pay.example">',
      );
      expect(page.html).toContain('<meta name="vault-element" content="cardNumber">');
    });

    it.each([
      ['an unknown application', APP, null],
      ['an application without origins', APP, []],
    ])('%s: embeddable nowhere', async (_what, id, origins) => {
      allowedOriginsOf.mockResolvedValue(origins);
      const page = await service.frame(id, 'card');
      expect(page.contentSecurityPolicy).toContain("frame-ancestors 'none'");
      expect(page.html).toContain('<meta name="vault-allowed-origins" content="">');
    });

    it.each([undefined, 'not-a-uuid', ['a', 'b']])(
      'application_id %p: no lookup, embeddable nowhere',
      async (id) => {
        const page = await service.frame(id, 'controller');
        expect(allowedOriginsOf).not.toHaveBeenCalled();
        expect(page.contentSecurityPolicy).toContain("frame-ancestors 'none'");
      },
    );

    it.each([undefined, 'password', ['card']])('element %p: not found', async (element) => {
      expect(await refusal(() => service.frame(APP, element))).toBe(ElementsErrorCode.NotFound);
      expect(allowedOriginsOf).not.toHaveBeenCalled();
    });
  });

  describe('asset', () => {
    it('answers a built file with its media type', () => {
      const content = Buffer.from('window.VaultElements = {};');
      get.mockReturnValue(content);
      expect(service.asset('elements.js')).toEqual({
        content,
        contentType: 'text/javascript; charset=utf-8',
      });
      expect(get).toHaveBeenCalledWith('elements.js');
      expect(service.asset('elements.d.ts').contentType).toBe('text/plain; charset=utf-8');
    });

    it.each(['frame.html.js', 'toString', '__proto__', '../package.json'])('%s: not found', async (file) => {
      expect(await refusal(() => service.asset(file))).toBe(ElementsErrorCode.NotFound);
      expect(get).not.toHaveBeenCalled();
    });

    it('a file not built: unavailable', async () => {
      get.mockReturnValue(undefined);
      expect(await refusal(() => service.asset('frame.js'))).toBe(ElementsErrorCode.NotBuilt);
    });
  });
});
