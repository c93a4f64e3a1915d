import { Injectable } from '@nestjs/common';
import { ApplicationsService } from '../applications/applications.service';
import { ASSETS, type AssetName, ElementAssets } from './element-assets';
import { ElementsException } from './elements.errors';
import { frameContentSecurityPolicy, frameHtml, isFrameType } from './frame-page';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An iframe's document and the one Content-Security-Policy it is served with. */
export interface FramePage {
  html: string;
  contentSecurityPolicy: string;
}

/** A file of the browser code and its media type. */
export interface ElementAsset {
  content: Buffer;
  contentType: string;
}

/**
 * The card elements (docs/elements.md): the browser scripts a merchant's page loads from the service, and
 * the document of each iframe, served from the service's own origin so that the page never holds a card
 * number. No key: the frame's key is the one the page gives `VaultElements.init`, used by the frame itself.
 */
@Injectable()
export class ElementsService {
  constructor(
    private readonly assets: ElementAssets,
    private readonly applications: ApplicationsService,
  ) {}

  /**
   * The document of an iframe of type `element`, embeddable only by the application's allowed origins;
   * an unknown application, one of another type or one without origins: by none. An unknown element
   * type: not found. The query's values come as they were sent (absent, repeated, anything).
   */
  async frame(applicationId: unknown, element: unknown): Promise<FramePage> {
    if (!isFrameType(element)) throw ElementsException.notFound('Element');
    const origins =
      typeof applicationId === 'string' && UUID.test(applicationId)
        ? ((await this.applications.allowedOriginsOf(applicationId.toLowerCase())) ?? [])
        : [];
    return { html: frameHtml(element, origins), contentSecurityPolicy: frameContentSecurityPolicy(origins) };
  }

  /** elements.js, elements.mjs, frame.js or elements.d.ts; another name: not found; not built: unavailable. */
  asset(file: string): ElementAsset {
    if (!Object.hasOwn(ASSETS, file)) throw ElementsException.notFound('File');
    const name = file as AssetName;
    const content = this.assets.get(name);
    if (!content) throw ElementsException.notBuilt();
    return { content, contentType: ASSETS[name] };
  }
}
