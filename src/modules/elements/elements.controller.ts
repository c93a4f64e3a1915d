import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { ProblemException, notFound } from '../../common/errors/problem.exception';
import { ApplicationsService } from '../applications/applications.service';
import { ASSETS, AssetName, ElementAssets } from './element-assets';
import { frameContentSecurityPolicy, frameHtml, isFrameType } from './frame-page';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The card elements (docs/elements.md): the browser scripts a merchant's page loads from the service, and
 * the document of each iframe, served from the service's own origin so that the page never holds a card
 * number. No key: the frame's key is the one the page gives `VaultElements.init`, used by the frame itself.
 */
@ApiExcludeController()
@Controller('elements/v1')
@RequirePermissions([], { public: true })
export class ElementsController {
  constructor(
    private readonly assets: ElementAssets,
    private readonly applications: ApplicationsService,
  ) {}

  /**
   * The document of an iframe. Its one Content-Security-Policy lets only the application's allowed origins
   * embed it (helmet's own policy and X-Frame-Options are replaced); unknown applications, other types and
   * applications without origins get `frame-ancestors 'none'`.
   */
  @Get('frame.html')
  async frame(
    @Query('application_id') applicationId: unknown,
    @Query('element') element: unknown,
    @Res() res: Response,
  ): Promise<void> {
    if (!isFrameType(element)) throw notFound('Element');
    const origins =
      typeof applicationId === 'string' && UUID.test(applicationId)
        ? ((await this.applications.allowedOriginsOf(applicationId.toLowerCase())) ?? [])
        : [];
    res.removeHeader('X-Frame-Options');
    res.setHeader('Content-Security-Policy', frameContentSecurityPolicy(origins));
    res.setHeader('Cache-Control', 'no-cache');
    res.type('text/html; charset=utf-8').send(frameHtml(element, origins));
  }

  /** elements.js, elements.mjs, frame.js and elements.d.ts: public, cacheable, loadable from any origin. */
  @Get(':file')
  asset(@Param('file') file: string, @Res() res: Response): void {
    if (!Object.hasOwn(ASSETS, file)) throw notFound('File');
    const content = this.assets.get(file as AssetName);
    if (!content)
      throw new ProblemException(503, 'The card elements are not built on this server.', {
        code: 'elements_not_built',
      });
    res.setHeader('Content-Type', ASSETS[file as AssetName]);
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    // A page's `<script type="module">` fetches elements.mjs in CORS mode: public files, readable by all.
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.send(content);
  }
}
