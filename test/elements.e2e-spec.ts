import axe from 'axe-core';
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
import request from 'supertest';
import { launchChromium } from './support/browser';
import { waitFor } from './support/wait';
import {
  elementsTenant,
  ElementsTenant,
  harness,
  Merchant,
  startMerchant,
  startVault,
  tokenOf,
  Vault,
} from './support/elements-merchant';

const VISA = '4242424242424242';
const AMEX = '378282246310005';
const AMEX_CID = '7391';
const CVC = '318';
const EXPIRY = '1234'; // typed as digits: 12 / 34

/** A value as a whole word: not inside a longer run of letters and digits (ids, timestamps). */
const word = (value: string) => new RegExp(`(?<![0-9A-Za-z])${value}(?![0-9A-Za-z])`);
const spaced = (n: string) => n.replace(/(\d{4})(?=\d)/g, '$1 ');

/**
 * The card elements in headless Chromium (docs/elements.md): the merchant's page on its own origin
 * loads elements.js from the vault, the card is typed in the vault's iframes, and only states and the
 * token reach the page. The service's side (origins, headers): test/frame-headers.e2e-spec.ts.
 */
describe('card elements in Chromium', () => {
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

  interface Opened {
    context: BrowserContext;
    page: Page;
    /** Every request of the page and of its frames. */
    requests: { url: string; method: string; postData: string; frameUrl: string }[];
    console: string[];
    pageErrors: string[];
  }

  const open = async (url = merchant.origin + '/'): Promise<Opened> => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const opened: Opened = { context, page, requests: [], console: [], pageErrors: [] };
    page.on('request', (r) =>
      opened.requests.push({
        url: r.url(),
        method: r.method(),
        postData: r.postData() ?? '',
        frameUrl: r.frame().url(),
      }),
    );
    page.on('console', (m) => opened.console.push(m.text()));
    page.on('pageerror', (e) => opened.pageErrors.push(e.message));
    await page.goto(url);
    return opened;
  };

  const init = async (page: Page, key = shop.publicKey, applicationId = shop.applicationId) =>
    harness(page, (h, a) => h.init(a.key, a.applicationId), { key, applicationId });

  const mount = async (page: Page, name: string, type: string, options: unknown = undefined) => {
    await harness(page, (h, a) => h.create(a.name, a.type, a.options), { name, type, options });
    return harness(page, (h, a) => h.mount(a, `#${a}`), name);
  };

  const field = (page: Page, name: string, input: string) =>
    page.frameLocator(`#${name} iframe`).locator(`input[name="${input}"]`);

  /**
   * The element's last change event once its events have settled: each keystroke posts one from the frame,
   * and they reach the page a moment later (later still on a loaded machine), so the count must hold still
   * over a few polls before the last one is read.
   */
  const lastChange = async (page: Page, name: string) => {
    const changesOf = async () =>
      (await harness(page, (h) => h.events, null)).filter((e) => e.element === name && e.event === 'change');
    let changes = await changesOf();
    for (let still = 0; still < 3;) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const next = await changesOf();
      still = next.length === changes.length ? still + 1 : 0;
      changes = next;
    }
    return changes[changes.length - 1]?.payload;
  };

  const color = (input: ReturnType<typeof field>) =>
    input.evaluate(
      (e) =>
        (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(e)
          .color,
    );

  const tokensRequests = (o: Opened) => o.requests.filter((r) => new URL(r.url).pathname === '/tokens');

  const readToken = async (id: string) =>
    (await request(vault.t.http).get(`/tokens/${id}`).set('BT-API-KEY', shop.privateKey).expect(200)).body;

  describe('typing and tokenizing', () => {
    it('card element: change events up to complete, tokenize, the token reads back with the same last four', async () => {
      const o = await open();
      expect(await init(o.page)).toEqual({ ok: true });
      expect(
        await mount(o.page, 'card', 'card', {
          style: {
            base: { color: '#1a1a1a', fontSize: '16px', fontFamily: 'system-ui' },
            invalid: { color: '#c0392b' },
          },
        }),
      ).toEqual({ ok: true });

      await field(o.page, 'card', 'number').pressSequentially(VISA);
      expect(await field(o.page, 'card', 'number').inputValue()).toBe(spaced(VISA));
      expect(await lastChange(o.page, 'card')).toMatchObject({
        complete: false,
        cardBrand: 'visa',
        errors: [
          { field: 'expiration_date', type: 'incomplete' },
          { field: 'cvc', type: 'incomplete' },
        ],
      });
      await field(o.page, 'card', 'expiration_date').pressSequentially(EXPIRY);
      expect(await field(o.page, 'card', 'expiration_date').inputValue()).toBe('12 / 34');
      await field(o.page, 'card', 'cvc').pressSequentially(CVC);
      expect(await lastChange(o.page, 'card')).toEqual({
        elementType: 'card',
        complete: true,
        empty: false,
        errors: [],
        cardBrand: 'visa',
        cardLast4: '4242',
      });

      const tokenized = await harness(
        o.page,
        (h) => h.tokenize({ card: 'card', metadata: { order: '42' } }),
        null,
      );
      expect(tokenized.ok).toBe(true);
      const token = tokenOf(tokenized);
      expect(token).toMatchObject({
        type: 'card',
        mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2034 },
        metadata: { order: '42' },
      });
      const read = await readToken(token.id);
      expect(read.mask.number.slice(-4)).toBe('4242');
      expect(read.metadata).toEqual({ order: '42' });
      expect(o.pageErrors).toEqual([]);
      await o.context.close();
    });

    it('split elements (number, expiry, CVC): each completes, tokenize with month() and year(), read back', async () => {
      const o = await open();
      expect(await init(o.page)).toEqual({ ok: true });
      expect(await mount(o.page, 'number', 'cardNumber')).toEqual({ ok: true });
      expect(await mount(o.page, 'expiry', 'cardExpirationDate')).toEqual({ ok: true });
      expect(await mount(o.page, 'cvc', 'cardVerificationCode')).toEqual({ ok: true });

      await field(o.page, 'number', 'number').pressSequentially(AMEX);
      expect(await field(o.page, 'number', 'number').inputValue()).toBe('3782 822463 10005');
      expect(await lastChange(o.page, 'number')).toEqual({
        elementType: 'cardNumber',
        complete: true,
        empty: false,
        errors: [],
        cardBrand: 'amex',
        cardLast4: '0005',
      });
      await field(o.page, 'expiry', 'expiration_date').pressSequentially('0930');
      expect(await lastChange(o.page, 'expiry')).toMatchObject({
        complete: true,
        cardBrand: null,
        errors: [],
      });
      // American Express: the CVC element learns from the number element that it takes four digits.
      await field(o.page, 'cvc', 'cvc').pressSequentially(AMEX_CID.slice(0, 3));
      expect(await lastChange(o.page, 'cvc')).toMatchObject({
        complete: false,
        errors: [{ field: 'cvc', type: 'incomplete' }],
      });
      await field(o.page, 'cvc', 'cvc').pressSequentially(AMEX_CID.slice(3));
      expect(await lastChange(o.page, 'cvc')).toMatchObject({ complete: true, errors: [] });

      const tokenized = await harness(
        o.page,
        (h) => h.tokenize({ number: 'number', expiry: 'expiry', cvc: 'cvc' }),
        null,
      );
      expect(tokenized.ok).toBe(true);
      const token = tokenOf(tokenized);
      expect(token.mask).toEqual({ number: 'XXXXXXXXXXX0005', expiration_month: 9, expiration_year: 2030 });
      expect((await readToken(token.id)).mask.number.slice(-4)).toBe('0005');
      await o.context.close();
    });
  });

  /** Every string and number in `value` (an event, a message): none may be or hold a card value. */
  const leaves = (value: unknown): string[] =>
    typeof value === 'object' && value !== null
      ? Object.entries(value).flatMap(([k, v]) => [k, ...leaves(v)])
      : value === undefined || value === null
        ? []
        : [typeof value === 'string' ? value : JSON.stringify(value)];
  const expectNoValue = (texts: string[], values: string[]) => {
    for (const text of texts) {
      for (const v of values) {
        expect({ text, holds: text.includes(v) || text.replace(/\s/g, '').includes(v) }).toEqual({
          text,
          holds: false,
        });
      }
    }
  };
  const expectNoWord = (texts: string[], value: string) => {
    for (const text of texts) expect({ text, holds: word(value).test(text) }).toEqual({ text, holds: false });
  };

  describe('the ES module', () => {
    it('elements.mjs imported by a module script of the page works as elements.js does', async () => {
      merchant.page(
        '/module',
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Module</title></head><body>
<div id="card"></div>
<script type="module">
import VaultElements from '${vault.url}/elements/v1/elements.mjs';
window.outcome = VaultElements.init(${JSON.stringify(shop.publicKey)}, {
  baseUrl: ${JSON.stringify(vault.url)},
  applicationId: ${JSON.stringify(shop.applicationId)},
})
  .then((elements) => elements.createElement('card').mount('#card'))
  .then(() => 'mounted', (e) => e.code);
</script></body></html>`,
      );
      const o = await open(`${merchant.origin}/module`);
      // A module script of another origin is fetched with CORS: the vault must answer it with
      // Access-Control-Allow-Origin (the console says so otherwise).
      await o.page
        .waitForFunction('window.outcome !== undefined', null, { timeout: 10_000 })
        .catch(() => undefined);
      expect({ outcome: await o.page.evaluate('window.outcome'), console: o.console }).toEqual({
        outcome: 'mounted',
        console: [],
      });
      await o.context.close();
    });
  });

  describe('element methods', () => {
    it('update, clear, focus, unmount and mount again (a new channel); tokens.create needs a mounted element', async () => {
      const o = await open();
      expect(await init(o.page)).toEqual({ ok: true });
      expect(await mount(o.page, 'card', 'card', { placeholder: { number: 'Card number' } })).toEqual({
        ok: true,
      });
      expect(await field(o.page, 'card', 'number').getAttribute('placeholder')).toBe('Card number');
      expect(await field(o.page, 'card', 'cvc').getAttribute('placeholder')).toBe('CVC');

      await harness(o.page, (h) => h.call('card', 'update', { style: { base: { color: '#0a5c36' } } }), null);
      await waitFor(async () => (await color(field(o.page, 'card', 'number'))) === 'rgb(10, 92, 54)', {
        what: 'the updated style',
      });

      await harness(o.page, (h) => h.call('card', 'focus'), null);
      await waitFor(
        async () => (await harness(o.page, (h) => h.events, null)).some((e) => e.event === 'focus'),
        {
          what: 'the focus event',
        },
      );
      await o.page.keyboard.type(VISA);
      expect(await field(o.page, 'card', 'number').inputValue()).toBe(spaced(VISA));
      expect(await lastChange(o.page, 'card')).toMatchObject({ empty: false, cardBrand: 'visa' });
      await harness(o.page, (h) => h.call('card', 'clear'), null);
      await waitFor(async () => (await lastChange(o.page, 'card'))?.empty === true, {
        what: 'the change to empty',
      });
      expect(await field(o.page, 'card', 'number').inputValue()).toBe('');

      const first = (await harness(o.page, (h) => h.frames(), null)).find((f) => f.name === 'card')!.src;
      await harness(o.page, (h) => h.call('card', 'unmount'), null);
      expect((await harness(o.page, (h) => h.frames(), null)).map((f) => f.name)).toEqual(['controller']);
      expect(await harness(o.page, (h) => h.tokenize({ card: 'card' }), null)).toMatchObject({
        ok: false,
        code: 'element_not_mounted',
      });
      expect(await harness(o.page, (h) => h.mount('card', '#card'), null)).toEqual({ ok: true });
      const second = (await harness(o.page, (h) => h.frames(), null)).find((f) => f.name === 'card')!.src;
      expect(new URL(second).hash).not.toBe(new URL(first).hash);
      // The style given by update() is kept for the new mount.
      expect(await color(field(o.page, 'card', 'number'))).toBe('rgb(10, 92, 54)');
      expect(await harness(o.page, (h) => h.mount('card', '#card'), null)).toMatchObject({
        ok: false,
        code: 'already_mounted',
      });
      expect(tokensRequests(o)).toEqual([]);
      await o.context.close();
    });
  });

  describe('the values never reach the page', () => {
    it('not in the page requests, DOM, console, events or messages; the frames are out of reach', async () => {
      const o = await open();
      expect(await init(o.page)).toEqual({ ok: true });
      expect(await mount(o.page, 'card', 'card')).toEqual({ ok: true });
      expect(await mount(o.page, 'number', 'cardNumber')).toEqual({ ok: true });
      expect(await mount(o.page, 'expiry', 'cardExpirationDate')).toEqual({ ok: true });
      expect(await mount(o.page, 'cvc', 'cardVerificationCode')).toEqual({ ok: true });

      await field(o.page, 'card', 'number').pressSequentially(VISA);
      await field(o.page, 'card', 'expiration_date').pressSequentially(EXPIRY);
      await field(o.page, 'card', 'cvc').pressSequentially(CVC);
      await field(o.page, 'number', 'number').pressSequentially(AMEX);
      await field(o.page, 'expiry', 'expiration_date').pressSequentially(EXPIRY);
      await field(o.page, 'cvc', 'cvc').pressSequentially(AMEX_CID);
      await o.page.locator('h1').click(); // a blur
      const one = await harness(o.page, (h) => h.tokenize({ card: 'card' }), null);
      const two = await harness(
        o.page,
        (h) => h.tokenize({ number: 'number', expiry: 'expiry', cvc: 'cvc' }),
        null,
      );
      expect([one.ok, two.ok]).toEqual([true, true]);
      // The merchant's page sends the token to its own server, as a checkout does.
      await harness(o.page, (h, id) => h.order(id), tokenOf(one).id);

      const numbers = [VISA, spaced(VISA), AMEX, '3782 822463 10005'];
      const vaultOrigin = new URL(vault.url).origin;
      const origin = (url: string) => (url.startsWith('http') ? new URL(url).origin : url);
      // Requests: only the vault's own frames send the card, to the vault.
      const fromPage = o.requests.filter((r) => origin(r.frameUrl) !== vaultOrigin);
      expect(fromPage.length).toBeGreaterThan(2);
      expectNoValue(
        fromPage.flatMap((r) => [r.url, r.postData]),
        numbers,
      );
      expectNoWord(
        fromPage.flatMap((r) => [r.url, r.postData]),
        CVC,
      );
      expectNoWord(
        fromPage.flatMap((r) => [r.url, r.postData]),
        AMEX_CID,
      );
      const carrying = o.requests.filter((r) => r.postData.includes(VISA) || r.postData.includes(AMEX));
      expect(carrying.map((r) => [r.method, r.url, origin(r.frameUrl)])).toEqual([
        ['POST', `${vault.url}/tokens`, vaultOrigin],
        ['POST', `${vault.url}/tokens`, vaultOrigin],
      ]);
      expect(merchant.received.some((r) => r.url === '/order')).toBe(true);
      expectNoValue(
        merchant.received.flatMap((r) => [r.url, r.body]),
        numbers,
      );
      expectNoWord(
        merchant.received.flatMap((r) => [r.url, r.body]),
        CVC,
      );

      // The DOM, the console, the events and every message the page received.
      const html = await o.page.content();
      expectNoValue([html], numbers);
      expectNoWord([html], CVC);
      expectNoWord([html], AMEX_CID);
      expectNoValue(o.console, numbers);
      expectNoWord(o.console, CVC);
      const events = await harness(o.page, (h) => h.events, null);
      const messages = await harness(o.page, (h) => h.messages, null);
      expect(events.map((e) => e.event)).toEqual(
        expect.arrayContaining(['ready', 'change', 'focus', 'blur']),
      );
      expect(messages.length).toBeGreaterThan(10);
      const seen = [...leaves(events), ...messages.flatMap((m) => leaves(JSON.parse(m)))];
      expectNoValue(seen, numbers);
      for (const value of [CVC, AMEX_CID, EXPIRY, '12 / 34', '1234']) expect(seen).not.toContain(value);
      // The frames' documents are another origin's: out of the page's reach.
      const frames = await harness(o.page, (h) => h.frames(), null);
      expect(frames).toHaveLength(5);
      expect(frames.every((f) => f.contentDocumentIsNull)).toBe(true);
      expect(o.pageErrors).toEqual([]);
      expect(o.console).toEqual([]);
      await o.context.close();
    });
  });

  describe('invalid and incomplete input', () => {
    it('errors name the part and the reason, never a value; tokens.create rejects without any request', async () => {
      const o = await open();
      expect(await init(o.page)).toEqual({ ok: true });
      expect(
        await mount(o.page, 'card', 'card', {
          style: {
            base: { color: '#1a1a1a', '::placeholder': { color: '#767676' } },
            invalid: { color: '#c0392b' },
          },
        }),
      ).toEqual({ ok: true });

      const empty = await harness(o.page, (h) => h.tokenize({ card: 'card' }), null);
      expect(empty).toMatchObject({
        ok: false,
        code: 'incomplete_card',
        errors: [
          { field: 'number', type: 'incomplete' },
          { field: 'expiration_date', type: 'incomplete' },
          { field: 'cvc', type: 'incomplete' },
        ],
      });

      // A Mastercard number of full length that fails Luhn, a month 13, a CVC too short.
      await field(o.page, 'card', 'number').pressSequentially('5555555555554445');
      await field(o.page, 'card', 'expiration_date').pressSequentially('13');
      await field(o.page, 'card', 'cvc').pressSequentially('12');
      const change = await lastChange(o.page, 'card');
      expect(change).toEqual({
        elementType: 'card',
        complete: false,
        empty: false,
        cardBrand: 'mastercard',
        errors: [
          { field: 'number', type: 'invalid' },
          { field: 'expiration_date', type: 'invalid' },
          { field: 'cvc', type: 'incomplete' },
        ],
      });
      expect(await field(o.page, 'card', 'number').getAttribute('aria-invalid')).toBe('true');
      expect(await field(o.page, 'card', 'expiration_date').getAttribute('aria-invalid')).toBe('true');
      expect(await field(o.page, 'card', 'cvc').getAttribute('aria-invalid')).toBe('false');
      // The invalid style, applied through the CSSOM.
      expect(await color(field(o.page, 'card', 'number'))).toBe('rgb(192, 57, 43)');
      expect(await color(field(o.page, 'card', 'cvc'))).toBe('rgb(26, 26, 26)');
      // Placeholder colours through a constructed stylesheet (CSSOM: the frame's policy allows it).
      const rules = await o.page
        .frames()
        .find((f) => f.url().includes('element=card'))!
        .evaluate('[...document.adoptedStyleSheets[0].cssRules].map((r) => r.cssText)');
      expect(rules).toContain('#vault-cvc::placeholder { color: rgb(118, 118, 118); }');

      const rejected = await harness(o.page, (h) => h.tokenize({ card: 'card' }), null);
      expect(rejected).toMatchObject({ ok: false, code: 'incomplete_card', errors: change.errors });
      expect((rejected as { message: string }).message).toBe(
        'Vault elements: the card is not complete or not valid (number invalid, expiration_date invalid, cvc incomplete)',
      );

      // An expiry in the past.
      await field(o.page, 'card', 'expiration_date').fill('');
      await field(o.page, 'card', 'expiration_date').pressSequentially('0120');
      expect((await lastChange(o.page, 'card')).errors).toContainEqual({
        field: 'expiration_date',
        type: 'invalid',
      });

      // The frame checks again: a page that lies about the state still sends nothing.
      await harness(o.page, (h) => h.forceComplete('card'), null);
      const forced = await harness(o.page, (h) => h.tokenize({ card: 'card' }), null);
      expect(forced).toMatchObject({ ok: false, code: 'invalid_card' });

      const seen = leaves(await harness(o.page, (h) => h.events, null));
      expectNoValue(seen, ['5555555555554445', '5555 5555 5555 4445']);
      expect(seen).not.toContain('12');
      expect(seen).not.toContain('13');
      expect(tokensRequests(o)).toEqual([]);
      await o.context.close();
    });

    it('a style that could load a resource is refused when the element is created', async () => {
      const o = await open();
      expect(await init(o.page)).toEqual({ ok: true });
      await expect(
        harness(
          o.page,
          (h) => h.create('bad', 'card', { style: { base: { backgroundColor: 'url(https://x.example/)' } } }),
          null,
        ),
      ).rejects.toThrow(/style\.base\.backgroundColor contains a forbidden construct/);
      await expect(
        harness(
          o.page,
          (h) => h.create('bad', 'card', { style: { base: { backgroundImage: 'none' } } }),
          null,
        ),
      ).rejects.toThrow(/style\.base\.backgroundImage is not an allowed property/);
      await o.context.close();
    });
  });

  describe('keys', () => {
    const session = async (permissions: string[] | null) => {
      const created = await request(vault.t.http)
        .post('/sessions')
        .set('BT-API-KEY', shop.publicKey)
        .expect(201);
      if (permissions) {
        await request(vault.t.http)
          .post('/sessions/authorize')
          .set('BT-API-KEY', shop.privateKey)
          .send({ nonce: created.body.nonce, permissions })
          .expect(204);
      }
      return created.body.session_key as string;
    };
    const typeCard = async (page: Page) => {
      await field(page, 'card', 'number').pressSequentially(VISA);
      await field(page, 'card', 'expiration_date').pressSequentially(EXPIRY);
      await field(page, 'card', 'cvc').pressSequentially(CVC);
      // The page knows the card is complete only once the frame's last change event reached it.
      await waitFor(async () => (await lastChange(page, 'card'))?.complete === true, {
        timeoutMs: 5_000,
        what: 'the complete card reported to the page',
      });
    };

    it('a session key tokenizes within its grants', async () => {
      const o = await open();
      expect(await init(o.page, await session(['token:create']))).toEqual({ ok: true });
      expect(await mount(o.page, 'card', 'card')).toEqual({ ok: true });
      await typeCard(o.page);
      const tokenized = await harness(o.page, (h) => h.tokenize({ card: 'card' }), null);
      expect(tokenized.ok).toBe(true);
      const token = tokenOf(tokenized);
      expect((await readToken(token.id)).mask.number).toBe('XXXXXXXXXXXX4242');
      await o.context.close();

      // A session granted only token:read: the API refuses, and the page gets its answer.
      const reader = await open();
      expect(await init(reader.page, await session(['token:read']))).toEqual({ ok: true });
      expect(await mount(reader.page, 'card', 'card')).toEqual({ ok: true });
      await typeCard(reader.page);
      const refused = await harness(reader.page, (h) => h.tokenize({ card: 'card' }), null);
      expect(refused).toMatchObject({ ok: false, code: 'api_error', status: 403, problem: { status: 403 } });
      expectNoValue([JSON.stringify(refused)], [VISA]);
      await reader.context.close();
    });

    it('init refuses a key of another application, a session not authorized and an unknown key, clearly', async () => {
      const other = await request(vault.t.http)
        .post('/applications')
        .set('BT-API-KEY', shop.tenant.managementKey)
        .send({
          name: 'other',
          type: 'public',
          permissions: ['token:create'],
          allowed_origins: [merchant.origin],
        })
        .expect(201);
      const o = await open();
      expect(await init(o.page, other.body.key)).toEqual({
        ok: false,
        code: 'key_of_another_application',
        message: `Vault elements: the key does not belong to application ${shop.applicationId} (nor to a session it created)`,
      });
      expect(await init(o.page, await session(null))).toMatchObject({ ok: false, code: 'invalid_key' });
      expect(await init(o.page, 'key_pub_notakey')).toMatchObject({
        ok: false,
        code: 'invalid_key',
        message: 'Vault elements: the key is not valid (unknown, expired or revoked)',
      });
      // Nothing is left on the page.
      expect(await harness(o.page, (h) => h.frames(), null)).toEqual([]);
      await o.context.close();
    });
  });

  describe('accessibility', () => {
    const audit = async (frame: Frame) => {
      await frame.evaluate(axe.source);
      return frame.evaluate<{
        passes: number;
        violations: { id: string; nodes: string[] }[];
      }>(`axe.run(document, {
        runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      }).then((r) => ({
        passes: r.passes.length,
        violations: r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) })),
      }))`);
    };
    const expectAccessible = async (frame: Frame) => {
      const { passes, violations } = await audit(frame);
      expect(violations).toEqual([]);
      // axe did look: labels, names, contrast, language, title...
      expect(passes).toBeGreaterThan(5);
    };

    it('axe finds no WCAG 2.1 A or AA violation in the frames, empty or invalid; every input has a label', async () => {
      const o = await open();
      expect(await init(o.page)).toEqual({ ok: true });
      const style = {
        base: { color: '#1a1a1a', fontSize: '16px', fontFamily: 'system-ui' },
        invalid: { color: '#c0392b' },
      };
      for (const [name, type] of [
        ['card', 'card'],
        ['number', 'cardNumber'],
        ['expiry', 'cardExpirationDate'],
        ['cvc', 'cardVerificationCode'],
      ]) {
        expect(await mount(o.page, name, type, { style })).toEqual({ ok: true });
      }
      const frames = o.page.frames().filter((f) => /element=card/.test(f.url()));
      expect(frames).toHaveLength(4);
      for (const frame of frames) await expectAccessible(frame);

      await field(o.page, 'card', 'number').pressSequentially('5555555555554445');
      await field(o.page, 'card', 'expiration_date').pressSequentially('13');
      await field(o.page, 'number', 'number').pressSequentially('4242');
      await o.page.locator('h1').click();
      for (const frame of frames) await expectAccessible(frame);

      // Labels for screen readers, the autocomplete tokens and a numeric keyboard.
      const inputs = await o.page
        .frameLocator('#card iframe')
        .locator('input')
        .evaluateAll((list) =>
          (
            list as unknown as {
              labels: { textContent: string }[];
              autocomplete: string;
              inputMode: string;
            }[]
          ).map((i) => [i.labels[0]?.textContent, i.autocomplete, i.inputMode]),
        );
      expect(inputs).toEqual([
        ['Card number', 'cc-number', 'numeric'],
        ['Expiration date (MM / YY)', 'cc-exp', 'numeric'],
        ['Security code (CVC)', 'cc-csc', 'numeric'],
      ]);
      await o.context.close();
    });
  });
});
