import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from './support/browser';
import { freePort, ROOT, Spawned, spawnJs, stop, waitForReady } from './support/processes';
import { createDatabase, dropDatabase } from './support/test-database';

const SCREENSHOT = join(ROOT, 'test-output', 'swagger-ui-tokenize.png');
const KEY_LINE = /^\s+(key_mgt_[0-9A-Za-z]+)$/m;

/**
 * The Swagger UI at /docs of the BUILT service (`node dist/main.js`, compiled by `nest build` with the
 * swagger plugin, so the document holds every description taken from the code's comments), driven in
 * headless Chromium like a person would: open the page, authorize, try an operation out, execute.
 */
describe('Swagger UI of the built service in Chromium', () => {
  let db: { name: string; url: string };
  let server: Spawned;
  let browser: Browser;
  let baseUrl: string;
  let key: string;

  beforeAll(async () => {
    // `npm run build` when dist/ is missing or older than the sources (bin/vault.js decides), so that
    // the service below runs this code.
    const built = spawnSync(process.execPath, [join(ROOT, 'bin/vault.js'), '--help'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect({ status: built.status, stderr: built.stderr }).toEqual({ status: 0, stderr: expect.any(String) });

    db = await createDatabase('vault_test_swagger_ui');
    const port = await freePort();
    server = spawnJs('dist/main.js', [], {
      DATABASE_URL: db.url,
      PORT: String(port),
      BOOTSTRAP: 'true',
      LOG_LEVEL: 'warn',
      WEBHOOK_DELIVERY_ENABLED: 'false',
    });
    await waitForReady(port);
    baseUrl = `http://127.0.0.1:${port}`;
    const managementKey = KEY_LINE.exec(server.stdout())?.[1];
    expect(managementKey).toBeDefined();
    const created = await fetch(`${baseUrl}/applications`, {
      method: 'POST',
      headers: { 'BT-API-KEY': managementKey!, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Swagger UI', type: 'private', permissions: ['token:create'] }),
    });
    expect(created.status).toBe(201);
    key = ((await created.json()) as { key: string }).key;
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    if (server) await stop(server);
    if (db) await dropDatabase(db.name);
  });

  it('renders the operations, authorizes with a key and runs POST /tokenize through "Try it out" (201)', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    const scriptErrors: string[] = [];
    page.on('pageerror', (error) => scriptErrors.push(error.message));
    await page.goto(`${baseUrl}/docs`);
    // A script that does not parse leaves the page blank: no operation ever shows.
    await page
      .locator('#operations-Tokens-tokenize')
      .waitFor({ timeout: 20_000 })
      .catch((error: Error) => {
        throw new Error(
          `no operation rendered (page errors: ${JSON.stringify(scriptErrors)}): ${error.message}`,
        );
      });
    expect(scriptErrors).toEqual([]);
    expect(await page.locator('.opblock').count()).toBeGreaterThan(35);
    // The descriptions the plugin takes from the comments are there, `$` sequences and all.
    await expect(page.locator('.swagger-ui .info .title').textContent()).resolves.toContain('Token Vault');

    await page.click('.auth-wrapper button.authorize');
    await page.fill('.modal-ux input[type=text]', key);
    await page.click('.modal-ux .auth-btn-wrapper button.authorize');
    await page.click('.modal-ux button.btn-done');

    const operation = page.locator('#operations-Tokens-tokenize');
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation
      .locator('textarea.body-param__text')
      .fill(JSON.stringify({ type: 'token', data: 'typed in the Swagger UI' }));
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor();
    expect((await status.textContent())?.trim()).toBe('201');
    const body = await operation
      .locator('.live-responses-table .response-col_description pre')
      .first()
      .textContent();
    expect(body).toContain('"type": "token"');
    expect(body).not.toContain('typed in the Swagger UI');

    mkdirSync(join(ROOT, 'test-output'), { recursive: true });
    await operation.scrollIntoViewIfNeeded();
    await page.screenshot({ path: SCREENSHOT, fullPage: false });
    expect(existsSync(SCREENSHOT)).toBe(true);
    expect(scriptErrors).toEqual([]);
    await page.close();
  });
});
