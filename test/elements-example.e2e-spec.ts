import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from './support/browser';
import { elementsTenant, ElementsTenant, startVault, Vault } from './support/elements-merchant';
import { freePort, ROOT, Spawned, spawnJs, stop } from './support/processes';
import { waitFor } from './support/wait';

/** UPDATE_SCREENSHOTS=true writes the documentation's screenshot; otherwise it goes to test-output/. */
const SCREENSHOT = process.env.UPDATE_SCREENSHOTS
  ? join(ROOT, 'docs', 'images', 'checkout.png')
  : join(ROOT, 'test-output', 'checkout.png');

/**
 * The example checkout (examples/checkout: a page of its own origin, under its own Content-Security-Policy)
 * against the service, as its README runs it: the card typed in the vault's frame, Pay, a token.
 */
describe('the example checkout in Chromium', () => {
  let vault: Vault;
  let shop: ElementsTenant;
  let server: Spawned;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    vault = await startVault();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    shop = await elementsTenant(vault.t, [url]);
    server = spawnJs('examples/checkout/server.js', [], {
      PORT: String(port),
      VAULT_URL: vault.url,
      PUBLIC_KEY: shop.publicKey,
      APPLICATION_ID: shop.applicationId,
    });
    await waitFor(async () => (await fetch(url).catch(() => null))?.status === 200, {
      timeoutMs: 15_000,
      intervalMs: 100,
      what: 'the example checkout to listen',
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    if (server) await stop(server);
    await vault?.close();
  });

  it('prints the address to open: the origin allowed (as its README says), not http://localhost', async () => {
    await waitFor(() => server.stdout().includes('\n'), {
      what: 'the example checkout to print its address',
    });
    expect(server.stdout()).toBe(`checkout on ${url} (vault ${vault.url})\n`);
  });

  it('Pay is enabled once the card is complete, and pays with a token; the screenshot for the docs', async () => {
    const page = await browser.newPage({ viewport: { width: 640, height: 460 }, deviceScaleFactor: 1 });
    const logged: string[] = [];
    page.on('console', (m) => logged.push(m.text()));
    await page.goto(url);
    const card = page.frameLocator('#card iframe');
    await card.locator('input[name="number"]').waitFor();
    await expect(page.locator('#pay').isDisabled()).resolves.toBe(true);

    await card.locator('input[name="number"]').pressSequentially('5555555555554445');
    await page.locator('#errors', { hasText: 'The card number is not valid.' }).waitFor();
    await card.locator('input[name="number"]').fill('');
    await card.locator('input[name="number"]').pressSequentially('4242424242424242');
    await card.locator('input[name="expiration_date"]').pressSequentially('1234');
    await card.locator('input[name="cvc"]').pressSequentially('318');
    await page.locator('#pay:not([disabled])').waitFor();
    await expect(page.locator('#errors').textContent()).resolves.toBe('');
    await page.locator('h1').click();

    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });

    await page.click('#pay');
    await page.locator('#result', { hasText: 'Card saved as token' }).waitFor();
    expect(await page.textContent('#result')).toMatch(
      /^Card saved as token [0-9a-f-]{36} \(XXXXXXXXXXXX4242\)\.$/,
    );
    // The page's own Content-Security-Policy (script-src and frame-src naming the vault) lets it all work.
    expect(logged.filter((m) => /Content Security Policy/i.test(m))).toEqual([]);
    await page.close();
  });
});
