import { Injectable, Logger } from '@nestjs/common';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The files of the browser code (built from elements/src by scripts/build-elements.mjs). */
export const ASSETS = {
  'elements.js': 'text/javascript; charset=utf-8',
  'elements.mjs': 'text/javascript; charset=utf-8',
  'frame.js': 'text/javascript; charset=utf-8',
  'elements.d.ts': 'text/plain; charset=utf-8',
} as const;
export type AssetName = keyof typeof ASSETS;

/** The project's root: the closest directory above this file holding package.json (from src/ or dist/). */
function projectRoot(from: string): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) return from;
    dir = up;
  }
  return dir;
}

/**
 * The built browser code, read once from `elements/dist/v1` and kept in memory. Missing files (a checkout
 * where `npm run build` has not run) are a clear error on the request that needs them, not at start-up:
 * the API works without the elements.
 */
@Injectable()
export class ElementAssets {
  private readonly logger = new Logger('Elements');
  private readonly dir = join(projectRoot(__dirname), 'elements', 'dist', 'v1');
  private readonly cache = new Map<AssetName, Buffer>();

  get(name: AssetName): Buffer | undefined {
    const kept = this.cache.get(name);
    if (kept) return kept;
    const path = join(this.dir, name);
    if (!existsSync(path)) {
      this.logger.error({ path }, 'the card elements are not built: run `npm run build`');
      return undefined;
    }
    const content = readFileSync(path);
    this.cache.set(name, content);
    return content;
  }
}
