import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { ElementsService } from './elements.service';

/** The card elements' files and iframe documents (ElementsService): public, no key, not in the OpenAPI document. */
@ApiExcludeController()
@Controller('elements/v1')
@RequirePermissions([], { public: true })
export class ElementsController {
  constructor(private readonly elements: ElementsService) {}

  /**
   * The document of an iframe, with its one Content-Security-Policy (helmet's own policy and
   * X-Frame-Options are replaced): revalidated on every load, as the allowed origins may change.
   */
  @Get('frame.html')
  async frame(
    @Query('application_id') applicationId: unknown,
    @Query('element') element: unknown,
    @Res() res: Response,
  ): Promise<void> {
    const page = await this.elements.frame(applicationId, element);
    res.removeHeader('X-Frame-Options');
    res.setHeader('Content-Security-Policy', page.contentSecurityPolicy);
    res.setHeader('Cache-Control', 'no-cache');
    res.type('text/html; charset=utf-8').send(page.html);
  }

  /** elements.js, elements.mjs, frame.js and elements.d.ts: public, cacheable, loadable from any origin. */
  @Get(':file')
  asset(@Param('file') file: string, @Res() res: Response): void {
    const { content, contentType } = this.elements.asset(file);
    res.setHeader('Content-Type', contentType);
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    // A page's `<script type="module">` fetches elements.mjs in CORS mode: public files, readable by all.
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.send(content);
  }
}
