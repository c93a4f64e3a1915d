import { createHmac, randomBytes, randomInt } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CHECKOUT_CARDS,
  DECLINE_AMOUNTS,
  FakeAction,
  FakeCheckoutPayment,
  paymentAnswer,
  paymentDetails,
  sourceViolations,
} from './fake-checkout-cards';
import { checkoutFormViolations } from './fake-network-token-forms';

export { CHECKOUT_CARDS, DECLINE_AMOUNTS } from './fake-checkout-cards';
export type { FakeAction, FakeCheckoutPayment } from './fake-checkout-cards';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Json;
}

/** A Checkout.com webhook event as sent: `{id, type, created_on, data: {id, action_id, reference, ...}}`. */
export interface FakeEvent {
  id: string;
  type: string;
  created_on: string;
  data: Json;
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const ident = (prefix: string) =>
  `${prefix}_${Array.from({ length: 26 }, () => ALNUM[randomInt(ALNUM.length)]).join('')}`;

/** Checkout.com's `Cko-Signature`: lowercase hex HMAC-SHA256 of the body's bytes under the webhook secret. */
export const signWebhook = (body: string, secret: string): string =>
  createHmac('sha256', secret).update(body, 'utf8').digest('hex');

/**
 * A fake Checkout.com payments API on 127.0.0.1, to stand behind Prism with Checkout.com's NAS document:
 * `POST /payments` (outcomes: fake-checkout-cards.ts), `/payments/{id}/captures|voids|refunds` (202; the
 * action is processed when its webhook is sent, or at once with `actionsAtOnce`), `GET /payments/{id}` and
 * `/actions`; `Authorization: Bearer <secret key>`, `Cko-Idempotency-Key` honoured per key (the first
 * answer again), the webhooks Checkout.com would send queued for sendWebhooks(), and faults on demand.
 */
export class FakeCheckout {
  readonly requests: RecordedRequest[] = [];
  readonly payments = new Map<string, FakeCheckoutPayment>();
  readonly secretKeys = new Set<string>(['sk_sbox_fake_checkout_key']);
  readonly processingChannels = new Set<string>(['pc_fakechannel000000000000001']);
  /** Card sources the merchant keeps at Checkout.com (`src_…`), each for a card number (`addSource`). */
  readonly sources = new Map<string, string>();

  /** A card source of the merchant's from before the vault: an `id` source pays with it. */
  addSource(number: string): string {
    const id = `src_${randomBytes(13).toString('hex')}`;
    this.sources.set(id, number);
    return id;
  }
  readonly queued: FakeEvent[] = [];
  /** Every `source` that broke its discriminated schema (Prism does not check it): expected empty. */
  readonly sourceViolations: string[] = [];
  /** What is wrong with a network token's form beyond the document (fake-network-token-forms.ts): expected empty. */
  readonly formViolations: string[] = [];
  /** The next N POSTs are performed but never answered. */
  hangNext = 0;
  /** The next N POSTs answer 502 without doing anything. */
  failNext = 0;
  /** The next N POSTs are performed, then answered 502 (a 5xx after receipt). */
  failAfterNext = 0;
  /** The next N POSTs answer 429 without doing anything. */
  throttleNext = 0;
  /** Process captures, voids and refunds as they are asked (visible to look-ups at once). */
  actionsAtOnce = false;
  private readonly declineNext = new Set<string>();
  private readonly idempotent = new Map<string, { status: number; body: Json | undefined }>();
  private server!: Server;

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A captured payment made at Checkout.com without us (before a migration): its id, which relay refunds name. */
  seedPayment(amount: number, currency = 'USD'): string {
    const p: FakeCheckoutPayment = {
      id: ident('pay'),
      reference: 'order-before-the-migration',
      amount,
      currency,
      request: { source: { type: 'card', number: '4242424242424242' } },
      status: 'Captured',
      approved: true,
      responseCode: '10000',
      schemeId: '123456789012345',
      actions: [],
      captured: amount,
      refunded: 0,
    };
    this.payments.set(p.id, p);
    return p.id;
  }

  posts(path?: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && (!path || path.test(r.path)));
  }

  /** The most recent payment with this reference, or with this id. */
  payment(reference: string): FakeCheckoutPayment | undefined {
    return (
      this.payments.get(reference) ??
      [...this.payments.values()].reverse().find((p) => p.reference === reference)
    );
  }

  /** The next capture, void or refund (`Capture`, `Void`, `Refund`) is declined. */
  declineNextAction(type: 'Capture' | 'Void' | 'Refund'): void {
    this.declineNext.add(type);
  }

  /** The buyer finished the 3-D Secure page: the payment is authorized or declined; answers the session id. */
  completeChallenge(reference: string, authenticated: boolean): string {
    const p = this.payment(reference);
    if (!p?.sessionId) throw new Error(`FakeCheckout: no 3-D Secure payment ${reference}`);
    const session = p.sessionId;
    this.decide(p, authenticated ? '10000' : '20154');
    return session;
  }

  /** Makes pending actions visible and POSTs every queued event (or `events`) to `url`, signed with `secret`. */
  async sendWebhooks(
    url: string,
    secret: string,
    opts: { events?: FakeEvent[]; signature?: string | null; tamper?: boolean } = {},
  ): Promise<number[]> {
    for (const p of this.payments.values()) for (const a of p.actions) a.visible = true;
    const statuses: number[] = [];
    for (const event of opts.events ?? [...this.queued]) {
      const body = JSON.stringify(event);
      const signature = opts.signature === undefined ? signWebhook(body, secret) : opts.signature;
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(signature === null ? {} : { 'cko-signature': signature }),
        },
        body: opts.tamper
          ? body.replace(/"amount":(\d+)/, (_, n: string) => `"amount":${Number(n) + 1}`)
          : body,
      });
      await res.text();
      statuses.push(res.status);
      const i = this.queued.indexOf(event);
      if (res.status === 200 && !opts.tamper && i >= 0) this.queued.splice(i, 1);
    }
    return statuses;
  }

  private queue(type: string, p: FakeCheckoutPayment, action: FakeAction): void {
    this.queued.push({
      id: ident('evt'),
      type,
      created_on: new Date().toISOString(),
      data: {
        id: p.id,
        action_id: action.id,
        reference: action.reference ?? p.reference,
        amount: action.amount,
        currency: p.currency,
        response_code: action.response_code,
      },
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    let body: Json = {};
    try {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text) body = JSON.parse(text) as Json;
    } catch {
      return send(422, { error_type: 'request_invalid', error_codes: ['request_body_malformed'] });
    }
    const r: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      headers: req.headers,
      body,
    };
    this.requests.push(r);
    const auth = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''));
    if (!auth || !this.secretKeys.has(auth[1])) return send(401);
    const key = req.headers['cko-idempotency-key'];
    const stored = r.method === 'POST' && typeof key === 'string' ? `${auth[1]}\u0000${key}` : undefined;
    if (stored && this.idempotent.has(stored)) {
      const first = this.idempotent.get(stored)!;
      return send(first.status, first.body);
    }
    if (r.method === 'POST' && this.throttleNext > 0) {
      this.throttleNext--;
      return send(429, { error_type: 'too_many_requests', error_codes: ['too_many_requests'] });
    }
    if (r.method === 'POST' && this.failNext > 0) {
      this.failNext--;
      return send(502);
    }
    let status: number;
    let answer: Json | undefined;
    try {
      [status, answer] = this.route(r);
    } catch {
      // A body Prism would have refused (the fake called directly): a validation error rather than a hang.
      [status, answer] = [422, { error_type: 'request_invalid', error_codes: ['request_invalid'] }];
    }
    if (stored && status < 500) this.idempotent.set(stored, { status, body: answer });
    if (r.method !== 'POST') return send(status, answer);
    if (this.hangNext > 0) {
      this.hangNext--;
      return; // performed, never answered
    }
    if (this.failAfterNext > 0) {
      this.failAfterNext--;
      return send(502);
    }
    send(status, answer);
  }

  private route(r: RecordedRequest): [number, Json | undefined] {
    if (r.method === 'POST' && r.path === '/payments') return this.pay(r.body);
    const m = /^\/payments\/(pay_\w{26})(?:\/(captures|voids|refunds|actions))?$/.exec(r.path);
    const p = m ? this.payments.get(m[1]) : undefined;
    if (!m || !p) return [404, undefined];
    if (r.method === 'GET' && !m[2]) return [200, paymentDetails(p, this.links(p))];
    if (r.method === 'GET' && m[2] === 'actions')
      return [200, p.actions.filter((a) => a.visible).map(({ visible, ...a }) => (void visible, a))];
    if (r.method !== 'POST' || !m[2] || m[2] === 'actions') return [404, undefined];
    return this.act(p, m[2] as 'captures' | 'voids' | 'refunds', r.body);
  }

  private pay(b: Json): [number, Json] {
    const violations = sourceViolations(b.source);
    if (violations.length) {
      this.sourceViolations.push(...violations);
      return [422, { error_type: 'request_invalid', error_codes: ['source_invalid'] }];
    }
    this.formViolations.push(...checkoutFormViolations(b));
    if (!this.processingChannels.has(String(b.processing_channel_id)))
      return [422, { error_type: 'request_invalid', error_codes: ['processing_channel_id_invalid'] }];
    // An `id` source pays with the card it holds (unknown: Checkout.com's `source_id_invalid`).
    if (b.source.type === 'id' && !this.sources.has(String(b.source.id)))
      return [422, { error_type: 'request_invalid', error_codes: ['source_id_invalid'] }];
    // A network token's DPAN is its `token`: the same outcomes as a card number.
    const number = String(b.source.number ?? b.source.token ?? this.sources.get(String(b.source.id)));
    if (number === CHECKOUT_CARDS.invalidNumber)
      return [422, { error_type: 'request_invalid', error_codes: ['card_number_invalid'] }];
    const p: FakeCheckoutPayment = {
      id: ident('pay'),
      reference: String(b.reference ?? ''),
      amount: Number(b.amount ?? 0),
      currency: String(b.currency),
      request: b,
      status: 'Pending',
      approved: false,
      responseCode: '',
      schemeId: `${randomInt(1e5, 1e6)}${String(randomInt(1e9)).padStart(9, '0')}`,
      actions: [],
      captured: 0,
      refunded: 0,
    };
    this.payments.set(p.id, p);
    if (number === CHECKOUT_CARDS.threeDS && b['3ds']?.enabled === true && !b['3ds'].cryptogram) {
      p.sessionId = ident('sid');
      return [202, { id: p.id, status: 'Pending', reference: p.reference, _links: this.links(p, true) }];
    }
    const declined = DECLINE_AMOUNTS[p.amount]
      ? String(p.amount)
      : b.source.cvv === '000'
        ? '20087'
        : '10000';
    this.decide(p, declined);
    return [201, paymentAnswer(p, this.links(p))];
  }

  /** Authorizes (and captures, when asked) or declines a payment, queueing its webhooks. */
  private decide(p: FakeCheckoutPayment, code: string): void {
    delete p.sessionId;
    p.approved = code === '10000';
    p.responseCode = code;
    // Amount 0 is a card verification: `Card Verified`, nothing to capture.
    p.status = !p.approved ? 'Declined' : p.amount === 0 ? 'Card Verified' : 'Authorized';
    const auth = this.action(p, 'Authorization', p.amount, p.approved, code, p.reference, true);
    this.queue(p.approved ? 'payment_approved' : 'payment_declined', p, auth);
    if (p.approved && p.amount > 0 && p.request.capture !== false) {
      p.captured = p.amount;
      p.status = 'Captured';
      this.queue(
        'payment_captured',
        p,
        this.action(p, 'Capture', p.amount, true, '10000', p.reference, true),
      );
    }
  }

  private action(
    p: FakeCheckoutPayment,
    type: FakeAction['type'],
    amount: number,
    approved: boolean,
    code: string,
    reference: string | undefined,
    visible: boolean,
  ): FakeAction {
    const a: FakeAction = {
      id: ident('act'),
      type,
      amount,
      approved,
      response_code: code,
      ...(reference ? { reference } : {}),
      processed_on: new Date().toISOString(),
      visible,
    };
    p.actions.unshift(a);
    return a;
  }

  private act(
    p: FakeCheckoutPayment,
    kind: 'captures' | 'voids' | 'refunds',
    b: Json,
  ): [number, Json | undefined] {
    const type = ({ captures: 'Capture', voids: 'Void', refunds: 'Refund' } as const)[kind];
    const allowed =
      kind === 'refunds' ? p.captured > p.refunded : p.status === 'Authorized' && p.captured === 0;
    const amount = Number(b.amount ?? (kind === 'refunds' ? p.captured - p.refunded : p.amount));
    const limit = kind === 'refunds' ? p.captured - p.refunded : p.amount;
    if (!allowed) return [403, undefined];
    if (amount > limit) return [422, { error_type: 'request_invalid', error_codes: ['amount_invalid'] }];
    const approved = !this.declineNext.delete(type);
    if (approved && kind === 'captures') {
      p.captured = amount;
      p.status = amount < p.amount ? 'Partially Captured' : 'Captured';
    } else if (approved && kind === 'voids') p.status = 'Voided';
    else if (approved) {
      p.refunded += amount;
      p.status = p.refunded < p.captured ? 'Partially Refunded' : 'Refunded';
    }
    const a = this.action(
      p,
      type,
      amount,
      approved,
      approved ? '10000' : '20012',
      b.reference,
      this.actionsAtOnce,
    );
    const events = { Capture: 'payment_capture', Void: 'payment_void', Refund: 'payment_refund' } as const;
    const done = { Capture: 'payment_captured', Void: 'payment_voided', Refund: 'payment_refunded' } as const;
    this.queue(approved ? done[type] : `${events[type]}_declined`, p, a);
    return [
      202,
      {
        action_id: a.id,
        ...(b.reference ? { reference: b.reference } : {}),
        _links: { payment: { href: this.href(p) } },
      },
    ];
  }

  private href = (p: FakeCheckoutPayment) => `https://api.sandbox.checkout.com/payments/${p.id}`;

  private links(p: FakeCheckoutPayment, redirect = false): Json {
    return {
      self: { href: this.href(p) },
      ...(redirect
        ? { redirect: { href: `${this.baseUrl}/3ds/${p.id}` } }
        : { actions: { href: `${this.href(p)}/actions` } }),
    };
  }
}
