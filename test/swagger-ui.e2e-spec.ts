import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from './support/browser';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { freePort, ROOT } from './support/processes';

const SCREENSHOT = join(ROOT, 'test-output', 'swagger-ui-tokenize.png');

/** The Swagger UI at /docs, driven in headless Chromium like a person would: authorize, try it out, execute. */
describe('Swagger UI in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let baseUrl: string;
  let key: string;

  beforeAll(async () => {
    const port = await freePort();
    t = await startApp({ PORT: String(port) });
    await t.app.listen(port, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${port}`;
    const tenant = await newTenant(t);
    key = (await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:create'] }))
      .key;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('authorizes with a key and runs POST /tokenize through "Try it out" (201)', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    await page.goto(`${baseUrl}/docs`);
    await page.waitForSelector('.swagger-ui .information-container');

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
    await page.close();
  });
});
