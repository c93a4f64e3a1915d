import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { launchChromium } from './support/browser';
import { freePort } from './support/processes';
import {
  elementsTenant,
  ElementsTenant,
  harness,
  Merchant,
  startMerchant,
  startVault,
  Vault,
} from './support/elements-merchant';

const VISA = '4242424242424242';

/**
 * Who may embed and drive the card elements' frames: only pages of the public application's allowed
 * origins (the frame's `frame-ancestors`, and frame.js's own check of the embedding origin and of every
 * message's origin and source). The merchant's page is `http://127.0.0.1:<port>`; the same server under
 * `http://localhost:<port>` is another origin, never allowed.
 */
describe('card elements: only allowed origins embed and drive the frames', () => {
  let vault: Vault;
  let merchant: Merchant;
  let browser: Browser;
  let shop: ElementsTenant;

  beforeAll(async () => {
    vault = await startVault();
    merchant = await startMerchant(vault.url);
    shop = await elementsTenant(vault.t, [merchant.origin]);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await merchant?.close();
    await vault?.close();
  });

  interface Session {
    context: BrowserContext;
    /** Every request of every page and frame of the context. */
    requests: string[];
  }
  const session = async (): Promise<Session> => {
    const context = await browser.newContext();
    const s: Session = { context, requests: [] };
    context.on('request', (r) => s.requests.push(`${r.method()} ${r.url()}`));
    return s;
  };
  const apiCalls = (s: Session) => s.requests.filter((r) => /\/(tokens|applications\/key)$/.test(r));
  const frameUrl = (applicationId: string, element: string, hash: string) =>
    `${vault.url}/elements/v1/frame.html?application_id=${applicationId}&element=${element}#${hash}`;
  const hashFor = (origin: string) =>
    `c=${'a'.repeat(32)}&g=${'b'.repeat(32)}&o=${encodeURIComponent(origin)}`;
  const settle = (page: Page) => page.waitForTimeout(1500);
  /** The attacker's page: it records every message it receives. */
  const attackerPage = (
    body: string,
  ) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Other</title></head>
<body><script>
window.received = [];
window.addEventListener('message', function (e) { window.received.push(JSON.stringify({ origin: e.origin, data: e.data })); });
</script>${body}</body></html>`;
  const received = (page: Page) => page.evaluate<string[]>('window.received');
  const inputsIn = async (page: Page) => {
    let count = 0;
    for (const frame of page.frames()) {
      count += await frame
        .locator('input')
        .count()
        .catch(() => 0);
    }
    return count;
  };

  it('a page of an origin not allowed: init rejects at once, and a frame it embeds stays blank', async () => {
    const s = await session();
    const page = await s.context.newPage();
    await page.goto(`${merchant.otherOrigin}/`);
    const started = Date.now();
    const outcome = await harness(page, (h, a) => h.init(a.key, a.id), {
      key: shop.publicKey,
      id: shop.applicationId,
    });
    console.log(`init from an origin not allowed rejected after ${Date.now() - started} ms`);
    expect(outcome).toEqual({
      ok: false,
      code: 'frame_unavailable',
      message: `Vault elements: the vault's frame did not start: is ${merchant.otherOrigin} in the application's allowed_origins, and is the vault reachable at ${vault.url}/?`,
    });
    expect(await harness(page, (h) => h.frames(), null)).toEqual([]);

    // Its own iframe of a card element, claiming the allowed origin in the hash: blocked by frame-ancestors.
    merchant.page(
      '/embeds',
      attackerPage(
        `<iframe title="card" src="${frameUrl(shop.applicationId, 'card', hashFor(merchant.origin))}"></iframe>`,
      ),
    );
    const embeds = await s.context.newPage();
    await embeds.goto(`${merchant.otherOrigin}/embeds`);
    await settle(embeds);
    expect(embeds.frames()).toHaveLength(2);
    expect(await inputsIn(embeds)).toBe(0);
    expect(await received(embeds)).toEqual([]);
    expect(apiCalls(s)).toEqual([]);
    await s.context.close();
  });

  it('an application without allowed_origins cannot be embedded anywhere', async () => {
    const closed = await request(vault.t.http)
      .post('/applications')
      .set('BT-API-KEY', shop.tenant.managementKey)
      .send({ name: 'no origins', type: 'public', permissions: ['token:create'] })
      .expect(201);
    const s = await session();
    const page = await s.context.newPage();
    await page.goto(`${merchant.origin}/`);
    expect(
      await harness(page, (h, a) => h.init(a.key, a.id), { key: closed.body.key, id: closed.body.id }),
    ).toMatchObject({ ok: false, code: 'frame_unavailable' });
    expect(apiCalls(s)).toEqual([]);
    await s.context.close();
  });

  it('the vault unreachable: init rejects, nothing hangs', async () => {
    const closedPort = await freePort();
    const s = await session();
    const page = await s.context.newPage();
    await page.goto(`${merchant.origin}/`);
    const outcome = await page.evaluate(
      ([url, key, id]) =>
        (
          globalThis as unknown as { VaultElements: { init(k: string, o: object): Promise<unknown> } }
        ).VaultElements.init(key, { baseUrl: url, applicationId: id }).then(
          () => 'resolved',
          (e: { code: string }) => e.code,
        ),
      [`http://localhost:${closedPort}`, shop.publicKey, shop.applicationId] as const,
    );
    expect(outcome).toBe('frame_unavailable');
    await s.context.close();
  });

  it('origins taken away after init: mount rejects and the element emits error', async () => {
    const app = await request(vault.t.http)
      .post('/applications')
      .set('BT-API-KEY', shop.tenant.managementKey)
      .send({
        name: 'soon closed',
        type: 'public',
        permissions: ['token:create'],
        allowed_origins: [merchant.origin],
      })
      .expect(201);
    const s = await session();
    const page = await s.context.newPage();
    await page.goto(`${merchant.origin}/`);
    expect(
      await harness(page, (h, a) => h.init(a.key, a.id), { key: app.body.key, id: app.body.id }),
    ).toEqual({
      ok: true,
    });
    await request(vault.t.http)
      .put(`/applications/${app.body.id}`)
      .set('BT-API-KEY', shop.tenant.managementKey)
      .send({ name: 'soon closed', allowed_origins: [] })
      .expect(200);
    await harness(page, (h) => h.create('card', 'card'), null);
    expect(await harness(page, (h) => h.mount('card', '#card'), null)).toMatchObject({
      ok: false,
      code: 'frame_unavailable',
    });
    const events = await harness(page, (h) => h.events, null);
    expect(events).toEqual([
      {
        element: 'card',
        event: 'error',
        payload: { elementType: 'card', error: { code: 'frame_unavailable', message: expect.any(String) } },
      },
    ]);
    expect((await harness(page, (h) => h.frames(), null)).map((f) => f.name)).toEqual(['controller']);
    await s.context.close();
  });

  it('the frame opened in a window by another origin does nothing, whatever it is sent', async () => {
    const s = await session();
    const url = frameUrl(shop.applicationId, 'controller', hashFor(merchant.origin));
    merchant.page('/opens', attackerPage(`<button id="open">open</button>`));
    const attacker = await s.context.newPage();
    await attacker.goto(`${merchant.otherOrigin}/opens`);
    const [popup] = await Promise.all([
      s.context.waitForEvent('page'),
      attacker.evaluate(`window.w = window.open(${JSON.stringify(url)}, 'vault')`),
    ]);
    await popup.waitForLoadState();
    await attacker.evaluate(`(() => {
      const m = (type, extra) => Object.assign({ tag: 'vault-elements/v1', ch: '${'a'.repeat(32)}', type }, extra);
      for (const message of [
        m('init', { key: ${JSON.stringify(shop.publicKey)} }),
        m('tokenize', { id: 'x', request: { type: 'card', data: { $element: '${'c'.repeat(32)}' } } }),
        m('configure', {}),
      ]) {
        try { window.w.postMessage(message, '*'); } catch (e) {}
      }
    })()`);
    await settle(attacker);
    expect(await received(attacker)).toEqual([]);
    expect(await popup.locator('input').count()).toBe(0);
    expect(apiCalls(s)).toEqual([]);
    await s.context.close();
  });

  it('another origin holding the frames of a real checkout (as its opener) cannot drive them', async () => {
    const s = await session();
    merchant.page('/opener', attackerPage(`<p>opener</p>`));
    const attacker = await s.context.newPage();
    await attacker.goto(`${merchant.otherOrigin}/opener`);
    const [checkout] = await Promise.all([
      s.context.waitForEvent('page'),
      attacker.evaluate(`window.shop = window.open(${JSON.stringify(`${merchant.origin}/`)}, 'shop')`),
    ]);
    await checkout.waitForLoadState();
    expect(
      await harness(checkout, (h, a) => h.init(a.key, a.id), { key: shop.publicKey, id: shop.applicationId }),
    ).toEqual({ ok: true });
    await harness(checkout, (h) => h.create('card', 'card'), null);
    expect(await harness(checkout, (h) => h.mount('card', '#card'), null)).toEqual({ ok: true });
    const card = checkout.frameLocator('#card iframe');
    await card.locator('input[name="number"]').pressSequentially(VISA);
    await card.locator('input[name="expiration_date"]').pressSequentially('1234');
    await card.locator('input[name="cvc"]').pressSequentially('318');

    // Suppose the channel ids leaked: the attacker posts to every frame of the checkout window.
    const frames = await harness(checkout, (h) => h.frames(), null);
    const channel = (name: string) =>
      new URLSearchParams(new URL(frames.find((f) => f.name === name)!.src).hash.slice(1));
    const controller = channel('controller');
    const element = channel('card');
    await attacker.evaluate(`(() => {
      const m = (ch, type, extra) => Object.assign({ tag: 'vault-elements/v1', ch, type }, extra);
      const controller = ${JSON.stringify(controller.get('c'))};
      const card = ${JSON.stringify(element.get('c'))};
      const messages = [
        m(controller, 'tokenize', { id: 'stolen', request: { type: 'card', data: { $element: card } } }),
        m(controller, 'tokenize', { id: 'stolen2', request: { type: 'card', data: { $element: card }, metadata: { n: { $element: card } } } }),
        m(controller, 'init', { key: 'key_pub_attacker' }),
        m(card, 'configure', {}),
        m(card, 'clear', {}),
        m(card, 'focus', {}),
      ];
      for (let i = 0; i < window.shop.frames.length; i++) {
        for (const message of messages) window.shop.frames[i].postMessage(message, '*');
      }
      window.shop.postMessage(messages[0], '*');
    })()`);
    await settle(attacker);
    expect(await received(attacker)).toEqual([]);
    expect(apiCalls(s).filter((r) => r.endsWith('/tokens'))).toEqual([]);

    // The checkout's own call still works: the card was neither cleared nor sent.
    const token = await harness(checkout, (h) => h.tokenize({ card: 'card' }), null);
    expect(token).toMatchObject({ ok: true, value: { mask: { number: 'XXXXXXXXXXXX4242' } } });
    expect(apiCalls(s).filter((r) => r.endsWith('/tokens'))).toEqual([`POST ${vault.url}/tokens`]);
    await s.context.close();
  });
});
