import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { waitFor } from '../support/wait';
import {
  checkoutPage,
  elementsTenant,
  ElementsTenant,
  harness,
  startMerchant,
  startVault,
} from '../support/elements-merchant';
import type { Merchant, Vault } from '../support/elements-merchant';

const ROUNDS = 20;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2034, cvc: '318' };

const p50 = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * What the frames add to a tokenize: POST /tokens through the elements (page -> controller frame ->
 * element frame and back -> API) against the same request made by the page itself with fetch (CORS).
 * Logged, not asserted (timings depend on the machine); the aim is at most 50 ms more at the median.
 */
describe('card elements: the cost of tokenizing through the frames', () => {
  let vault: Vault;
  let merchant: Merchant;
  let browser: Browser;
  let shop: ElementsTenant;
  let page: Page;

  beforeAll(async () => {
    // The service answers the page's own fetch only with CORS (the elements never need it): the
    // merchant's origin is known first, its page once the service listens.
    merchant = await startMerchant('http://127.0.0.1:1');
    vault = await startVault({ CORS_ORIGINS: merchant.origin });
    merchant.page('/', checkoutPage(vault.url));
    shop = await elementsTenant(vault.t, [merchant.origin]);
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(`${merchant.origin}/`);
  });
  afterAll(async () => {
    await browser?.close();
    await merchant?.close();
    await vault?.close();
  });

  it(`p50 of ${ROUNDS} tokenizes through the frames vs ${ROUNDS} direct fetches from the page`, async () => {
    expect(
      await harness(page, (h, a) => h.init(a.key, a.id), { key: shop.publicKey, id: shop.applicationId }),
    ).toEqual({
      ok: true,
    });
    await harness(page, (h) => h.create('card', 'card'), null);
    expect(await harness(page, (h) => h.mount('card', '#card'), null)).toEqual({ ok: true });
    const card = page.frameLocator('#card iframe');
    await card.locator('input[name="number"]').pressSequentially(CARD.number);
    await card.locator('input[name="expiration_date"]').pressSequentially('1234');
    await card.locator('input[name="cvc"]').pressSequentially(CARD.cvc);
    // The page tokenizes only once the frame's last change event (complete) has reached it.
    await waitFor(
      async () =>
        (await harness(page, (h) => h.events, null)).some(
          (e) => e.event === 'change' && e.payload.complete === true,
        ),
      { timeoutMs: 5_000, what: 'the complete card reported to the page' },
    );

    const direct = async () => {
      const { status, ms } = await harness(page, (h, a) => h.directTokenize(a.url, a.key, a.body), {
        url: vault.url,
        key: shop.publicKey,
        body: { type: 'card', data: CARD },
      });
      expect(status).toBe(201);
      return ms;
    };
    const framed = async () => (await harness(page, (h) => h.time(1, { card: 'card' }), null))[0];

    // Warm both paths (connections, JIT, the key cache), then measure them in turn.
    for (let i = 0; i < 5; i++) {
      await framed();
      await direct();
    }
    const framedTimes: number[] = [];
    const directTimes: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      framedTimes.push(await framed());
      directTimes.push(await direct());
    }
    const report = {
      framed_p50_ms: Math.round(p50(framedTimes) * 10) / 10,
      direct_p50_ms: Math.round(p50(directTimes) * 10) / 10,
      added_p50_ms: Math.round((p50(framedTimes) - p50(directTimes)) * 10) / 10,
    };
    console.log(`tokenize through the elements vs from the page (${ROUNDS} each): ${JSON.stringify(report)}`);
  });
});
