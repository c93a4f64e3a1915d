import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { newTenant, startApp, TestApp, TestTenant } from './app';
import { freePort } from './processes';

/**
 * The card elements in Chromium: the service on one origin (`http://localhost:<port>`), a merchant's page
 * on another (`http://127.0.0.1:<port>`), served by a small HTTP server that records every request it
 * receives (bodies included), so that tests can look for card values where they must never be.
 */

export interface Vault {
  t: TestApp;
  /** `http://localhost:<port>`: the vault's origin as the merchant's page knows it. */
  url: string;
  close(): Promise<void>;
}

export async function startVault(env: Record<string, string | undefined> = {}): Promise<Vault> {
  const port = await freePort();
  const t = await startApp({ PORT: String(port), ...env });
  await t.app.listen(port, '127.0.0.1');
  return { t, url: `http://localhost:${port}`, close: () => t.close() };
}

export interface ReceivedRequest {
  method: string;
  url: string;
  body: string;
}

export interface Merchant {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** The same server under another origin (`http://localhost:<port>`): never an allowed origin. */
  otherOrigin: string;
  /** Every request the server received. */
  received: ReceivedRequest[];
  /** Serves `html` at `path` from now on. */
  page(path: string, html: string): void;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => resolve(body));
  });

export async function startMerchant(vaultUrl: string): Promise<Merchant> {
  const pages = new Map<string, string>([['/', checkoutPage(vaultUrl)]]);
  const received: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      received.push({ method: req.method ?? '', url: req.url ?? '', body });
      const path = (req.url ?? '/').split('?')[0];
      const html = pages.get(path);
      if (req.method === 'POST' && path === '/order') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
      } else if (path === '/favicon.ico') {
        res.writeHead(204).end();
      } else if (html !== undefined) {
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(html);
      } else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    otherOrigin: `http://localhost:${port}`,
    received,
    page: (path, html) => void pages.set(path, html),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface ElementsTenant {
  tenant: TestTenant;
  publicKey: string;
  applicationId: string;
  /** A private application's key with token:read and token:create (to read tokens back, to authorize sessions). */
  privateKey: string;
}

/** A tenant with a public application (token:create) whose allowed origins are `origins`. */
export async function elementsTenant(t: TestApp, origins: string[]): Promise<ElementsTenant> {
  const tenant = await newTenant(t, 'elements');
  const pub = await request(t.http)
    .post('/applications')
    .set('BT-API-KEY', tenant.managementKey)
    .send({ name: 'checkout', type: 'public', permissions: ['token:create'], allowed_origins: origins })
    .expect(201);
  const pvt = await request(t.http)
    .post('/applications')
    .set('BT-API-KEY', tenant.managementKey)
    .send({ name: 'backend', type: 'private', permissions: ['token:read', 'token:create'] })
    .expect(201);
  return { tenant, publicKey: pub.body.key, applicationId: pub.body.id, privateKey: pvt.body.key };
}

/** What the harness answers for a failed call: the error's code, message and API answer, as a page sees them. */
export interface Failure {
  ok: false;
  code?: string;
  message: string;
  status?: number;
  problem?: Record<string, unknown>;
  errors?: { field: string; type: string }[];
}
export type Outcome<T = undefined> =
  ({ ok: true } & (T extends undefined ? unknown : { value: T })) | Failure;

/** The token object the API answers (its card masked). */
export interface TokenAnswer {
  id: string;
  type: string;
  mask: { number: string; expiration_month: number; expiration_year: number };
  metadata?: Record<string, string>;
  [field: string]: unknown;
}

/** The token of a tokenize that must have succeeded. */
export function tokenOf(outcome: Outcome<TokenAnswer>): TokenAnswer {
  if (!outcome.ok) throw new Error(`tokens.create failed: ${JSON.stringify(outcome)}`);
  return outcome.value;
}

/** The merchant page's test harness (window.harness), as the tests call it through page.evaluate. */
export interface Harness {
  events: { element: string; event: string; payload: Record<string, unknown> }[];
  messages: string[];
  init(key: string, applicationId: string, timeoutMs?: number): Promise<Outcome>;
  create(name: string, type: string, options?: unknown): void;
  mount(name: string, selector: string): Promise<Outcome>;
  tokenize(spec: TokenizeSpec): Promise<Outcome<TokenAnswer>>;
  call(name: string, method: string, ...args: unknown[]): void;
  forceComplete(name: string): void;
  frames(): { name: string; src: string; title: string; contentDocumentIsNull: boolean }[];
  directTokenize(vaultUrl: string, key: string, body: unknown): Promise<{ status: number; ms: number }>;
  time(count: number, spec: TokenizeSpec): Promise<number[]>;
  order(tokenId: string): Promise<void>;
}

export type TokenizeSpec =
  | { card: string; metadata?: Record<string, string> }
  | { number: string; expiry: string; cvc?: string; metadata?: Record<string, string> };

/**
 * Calls the page's harness: `harness(page, (h, name) => h.mount(name, '#card'), 'card')`. The function
 * travels as source text with its argument as JSON (Playwright passes values, not closures), so it may use
 * nothing but `h` and its argument.
 */
export function harness<T, A>(page: Page, fn: (h: Harness, arg: A) => T | Promise<T>, arg: A): Promise<T> {
  return page.evaluate<T>(`(${fn.toString()})(globalThis.harness, ${JSON.stringify(arg) ?? 'undefined'})`);
}

/**
 * The merchant's checkout page: the vault's elements.js and a harness the tests drive. It records every
 * element event and every message the page receives, as a merchant's script could.
 */
export function checkoutPage(vaultUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Merchant checkout</title>
<script src="${vaultUrl}/elements/v1/elements.js"></script>
</head>
<body>
<main>
<h1>Checkout</h1>
<div id="card"></div>
<div id="number"></div>
<div id="expiry"></div>
<div id="cvc"></div>
</main>
<script>
var VAULT_URL = ${JSON.stringify(vaultUrl)};
${HARNESS}
</script>
</body>
</html>`;
}

const HARNESS = String.raw`
(function () {
  var elements = null;
  var els = {};
  var failure = function (error) {
    return {
      ok: false,
      code: error && error.code,
      message: String(error && error.message),
      status: error && error.status,
      problem: error && error.problem,
      errors: error && error.errors,
    };
  };
  var data = function (spec) {
    if (spec.card) return els[spec.card];
    var d = { number: els[spec.number], expiration_month: els[spec.expiry].month(), expiration_year: els[spec.expiry].year() };
    if (spec.cvc) d.cvc = els[spec.cvc];
    return d;
  };
  var h = {
    events: [],
    messages: [],
    init: function (key, applicationId, timeoutMs) {
      return VaultElements.init(key, { baseUrl: VAULT_URL, applicationId: applicationId, timeoutMs: timeoutMs })
        .then(function (e) { elements = e; return { ok: true }; }, failure);
    },
    create: function (name, type, options) {
      var el = elements.createElement(type, options);
      els[name] = el;
      ['change', 'ready', 'focus', 'blur', 'error'].forEach(function (event) {
        el.on(event, function (payload) { h.events.push({ element: name, event: event, payload: payload }); });
      });
    },
    mount: function (name, selector) {
      return els[name].mount(selector).then(function () { return { ok: true }; }, failure);
    },
    tokenize: function (spec) {
      var request = { type: 'card', data: data(spec) };
      if (spec.metadata) request.metadata = spec.metadata;
      return elements.tokens.create(request).then(function (token) { return { ok: true, value: token }; }, failure);
    },
    call: function (name, method) {
      var el = els[name];
      el[method].apply(el, Array.prototype.slice.call(arguments, 2));
    },
    forceComplete: function (name) {
      els[name].state = { complete: true, empty: false, errors: [], cardBrand: null };
    },
    frames: function () {
      return Array.prototype.map.call(document.querySelectorAll('iframe'), function (f) {
        var name = Object.keys(els).filter(function (n) { return f.parentElement && f.parentElement.id === n; })[0] || 'controller';
        return { name: name, src: f.src, title: f.title, contentDocumentIsNull: f.contentDocument === null };
      });
    },
    directTokenize: function (vaultUrl, key, body) {
      var start = performance.now();
      return fetch(vaultUrl + '/tokens', {
        method: 'POST',
        headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      }).then(function (res) { return res.text().then(function () { return { status: res.status, ms: performance.now() - start }; }); });
    },
    time: function (count, spec) {
      var times = [];
      var next = function () {
        if (times.length === count) return Promise.resolve(times);
        var start = performance.now();
        return elements.tokens.create({ type: 'card', data: data(spec) }).then(function () {
          times.push(performance.now() - start);
          return next();
        });
      };
      return next();
    },
    order: function (tokenId) {
      return fetch('/order', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: tokenId }) })
        .then(function () {});
    },
  };
  window.addEventListener('message', function (event) {
    h.messages.push(JSON.stringify({ origin: event.origin, data: event.data }));
  });
  window.harness = h;
})();
`;
