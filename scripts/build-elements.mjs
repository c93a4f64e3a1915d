/*
 * Builds the browser code of the card elements (elements/src) with esbuild into elements/dist/v1: the
 * page script (elements.js, a classic script defining window.VaultElements, and elements.mjs, the same API
 * as an ES module) and the script of every iframe (frame.js). The service serves these files itself
 * (src/modules/elements); nothing is fetched from elsewhere at run time. `npm run build` runs it after
 * `nest build`; the tests' global setup runs it too.
 */
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'elements', 'dist', 'v1');
const common = {
  bundle: true,
  minify: true,
  target: 'es2020',
  platform: 'browser',
  legalComments: 'none',
  logLevel: 'warning',
  absWorkingDir: root,
};

export async function buildElements() {
  await mkdir(outdir, { recursive: true });
  await Promise.all([
    build({
      ...common,
      entryPoints: ['elements/src/page/global.ts'],
      format: 'iife',
      outfile: join(outdir, 'elements.js'),
    }),
    build({
      ...common,
      entryPoints: ['elements/src/page/module.ts'],
      format: 'esm',
      outfile: join(outdir, 'elements.mjs'),
    }),
    build({
      ...common,
      entryPoints: ['elements/src/frame/frame.ts'],
      format: 'iife',
      outfile: join(outdir, 'frame.js'),
    }),
  ]);
  await copyFile(join(root, 'elements', 'elements.d.ts'), join(outdir, 'elements.d.ts'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  buildElements().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
