import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stripeFormViolations } from './fake-network-token-forms';

/** One request the fake received, as Stripe would see it. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

type Json = Record<string, unknown>;

/** Parses `a[b][0]=x&c=y` (Stripe's form encoding) into nested objects (arrays as index-keyed objects). */
export function parseForm(text: string): Json {
  const out: Json = {};
  for (const pair of text.split('&').filter(Boolean)) {
    const [rawKey, rawValue = ''] = pair.split('=');
    const key = decodeURIComponent(rawKey.replace(/\+/g, ' '));
    const value = decodeURIComponent(rawValue.replace(/\+/g, ' '));
    const parts = key.split(/\[|\]\[|\]/).filter((p) => p !== '');
    let node = out;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else node = (node[part] ??= {}) as Json;
    });
  }
  return out;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** Stripe's documented test cards: what the fake does with each. */
const DECLINES: Record<string, { code: string; decline_code?: string; network_decline_code?: string }> = {
  '4000000000000002': { code: 'card_declined', decline_code: 'generic_decline', network_decline_code: '05' },
  '4000000000009995': {
    code: 'card_declined',
    decline_code: 'insufficient_funds',
    network_decline_code: '51',
  },
  '4000000000000069': { code: 'expired_card', network_decline_code: '54' },
  '4000000000000127': { code: 'incorrect_cvc', network_decline_code: 'N7' },
  '4000000000000119': { code: 'processing_error' },
};
const REQUIRES_ACTION = ['4000002500003155', '4000000000003220'];

/**
 * A fake Stripe on 127.0.0.1 for tests: PaymentIntents, SetupIntents, refunds and the balance, form
 * bodies parsed as Stripe does, outcomes by test card number, Idempotency-Key honoured (the same key
 * answers the first response again), and every request recorded.
 */
export class FakeStripe {
  readonly requests: RecordedRequest[] = [];
  /** Parameters the `stripe` package does not declare, a cryptogram out of place (fake-network-token-forms.ts): expected empty. */
  readonly formViolations: string[] = [];
  readonly intents = new Map<string, Json>();
  readonly refunds = new Map<string, Json>();
  /** Secret keys the fake accepts; others get a 401. */
  readonly keys = new Set<string>(['sk_test_fake', 'sk_live_fake']);
  /** The next N POSTs are performed but never answered (the connection hangs until the client's time-out). */
  hangNext = 0;
  /** The next N requests answer 500 without doing anything. */
  failNext = 0;
  /** The next N POSTs are neither performed nor answered: to Stripe, as if they never arrived. */
  stallNext = 0;
  /** The next N POSTs answer 429 (rate limited) without doing anything, as Stripe does. */
  rateLimitNext = 0;
  /** The next N POSTs are performed at once and answered `slowMs` later (a slow vendor call). */
  slowNext = 0;
  slowMs = 3_000;
  private readonly idempotent = new Map<string, { status: number; body: Json }>();
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

  private port = 0;

  /** Stops listening (connections are refused) until `resume`, which listens on the same port again. */
  async pause(): Promise<void> {
    this.port = (this.server.address() as AddressInfo).port;
    await this.close();
  }

  async resume(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
  }

  /**
   * A captured payment made at Stripe without us (before a migration): its PaymentIntent and charge ids,
   * which relay refunds name.
   */
  seedPayment(amount: number, currency = 'usd'): { paymentIntent: string; charge: string } {
    const pi: Json = {
      id: id('pi'),
      object: 'payment_intent',
      amount,
      amount_received: amount,
      currency,
      capture_method: 'automatic',
      metadata: {},
      status: 'succeeded',
      last_payment_error: null,
      next_action: null,
      latest_charge: { id: id('ch'), object: 'charge', amount, currency },
    };
    this.intents.set(String(pi.id), pi);
    return { paymentIntent: String(pi.id), charge: String((pi.latest_charge as Json).id) };
  }

  posts(path?: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && (!path || path.test(r.path)));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: parseForm(url.search.slice(1)),
      headers: req.headers,
      body: parseForm(Buffer.concat(chunks).toString('utf8')),
    };
    this.requests.push(recorded);
    const send = (status: number, body: Json) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
      res.end(JSON.stringify(body));
    };
    const key = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (!key || !this.keys.has(key))
      return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
    const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
    if (recorded.method === 'POST' && idempotencyKey && this.idempotent.has(idempotencyKey)) {
      const stored = this.idempotent.get(idempotencyKey)!;
      return send(stored.status, stored.body);
    }
    if (this.failNext > 0) {
      this.failNext--;
      return send(500, { error: { type: 'api_error', message: 'Something went wrong' } });
    }
    if (recorded.method === 'POST' && this.rateLimitNext > 0) {
      this.rateLimitNext--;
      return send(429, {
        error: { type: 'rate_limit_error', code: 'rate_limit', message: 'Too many requests' },
      });
    }
    if (recorded.method === 'POST' && this.stallNext > 0) {
      this.stallNext--;
      return; // received, never performed nor answered
    }
    const [status, body] = this.route(recorded);
    if (recorded.method === 'POST' && idempotencyKey) this.idempotent.set(idempotencyKey, { status, body });
    if (recorded.method === 'POST' && this.hangNext > 0) {
      this.hangNext--;
      return; // performed, never answered
    }
    if (recorded.method === 'POST' && this.slowNext > 0) {
      this.slowNext--;
      setTimeout(() => send(status, body), this.slowMs);
      return;
    }
    send(status, body);
  }

  private route(r: RecordedRequest): [number, Json] {
    const p = r.path;
    let m: RegExpExecArray | null;
    if (r.method === 'GET' && p === '/v1/balance')
      return [200, { object: 'balance', available: [], pending: [], livemode: false }];
    if (r.method === 'POST' && p === '/v1/payment_intents') return this.createIntent(r.body);
    if (r.method === 'POST' && p === '/v1/setup_intents') return this.createSetup(r.body);
    if (r.method === 'GET' && p === '/v1/payment_intents/search') {
      const wanted = /metadata\['reconciliation_id'\]:'([^']+)'/.exec(String(r.query.query))?.[1];
      const data = [...this.intents.values()].filter(
        (pi) => (pi.metadata as Json | undefined)?.reconciliation_id === wanted,
      );
      return [200, { object: 'search_result', data, has_more: false }];
    }
    if ((m = /^\/v1\/payment_intents\/([^/]+)(\/capture|\/cancel)?$/.exec(p))) {
      const pi = this.intents.get(m[1]);
      if (!pi) return notFound('payment_intent');
      if (r.method === 'GET' && !m[2]) return [200, this.view(pi, r.query)];
      if (r.method === 'POST' && m[2] === '/capture') {
        if (pi.status !== 'requires_capture') return unexpectedState(pi);
        const amount = Number(r.body.amount_to_capture ?? pi.amount);
        Object.assign(pi, { status: 'succeeded', amount_received: amount });
        return [200, this.view(pi, r.body)];
      }
      if (r.method === 'POST' && m[2] === '/cancel') {
        if (pi.status !== 'requires_capture' && pi.status !== 'requires_action') return unexpectedState(pi);
        pi.status = 'canceled';
        return [200, this.view(pi, r.body)];
      }
    }
    if (r.method === 'POST' && p === '/v1/refunds') {
      const charge = typeof r.body.charge === 'string' ? r.body.charge : undefined;
      const pi = charge ? this.byCharge(charge) : this.intents.get(String(r.body.payment_intent));
      if (!pi) return notFound(charge ? 'charge' : 'payment_intent');
      const refunded = [...this.refunds.values()]
        .filter((x) => x.payment_intent === pi.id)
        .reduce((sum, x) => sum + Number(x.amount), 0);
      const amount = Number(r.body.amount ?? Number(pi.amount_received) - refunded);
      if (pi.status !== 'succeeded' || refunded + amount > Number(pi.amount_received))
        return [400, { error: { type: 'invalid_request_error', code: 'charge_already_refunded' } }];
      const refund = {
        id: id('re'),
        object: 'refund',
        amount,
        currency: pi.currency,
        payment_intent: pi.id,
        charge: (pi.latest_charge as Json | null)?.id ?? null,
        status: 'succeeded',
        ...(r.body.reason ? { reason: r.body.reason } : {}),
        metadata: r.body.metadata ?? {},
      };
      this.refunds.set(refund.id, refund);
      return [200, refund];
    }
    if (r.method === 'GET' && p === '/v1/refunds') {
      const data = [...this.refunds.values()].filter((x) =>
        r.query.charge ? x.charge === r.query.charge : x.payment_intent === r.query.payment_intent,
      );
      return [200, { object: 'list', data, has_more: false }];
    }
    return notFound('route');
  }

  /**
   * A PaymentMethod the merchant keeps at Stripe, attached to a customer (`cus_…`), for a card: a
   * PaymentIntent with `payment_method` names it, and must name its customer too.
   */
  addPaymentMethod(number: string, customer: string): string {
    const pm = id('pm');
    this.paymentMethods.set(pm, { customer, number });
    return pm;
  }

  readonly paymentMethods = new Map<string, { customer: string; number: string }>();

  /** The PaymentIntent whose charge this is. */
  private byCharge(charge: string): Json | undefined {
    return [...this.intents.values()].find((pi) => (pi.latest_charge as Json | null)?.id === charge);
  }

  private createIntent(body: Json): [number, Json] {
    this.formViolations.push(...stripeFormViolations(body));
    let card = ((body.payment_method_data as Json | undefined)?.card ?? {}) as Json;
    if (body.payment_method !== undefined) {
      if (body.payment_method_data !== undefined)
        this.formViolations.push('payment_method and payment_method_data together');
      const pm = this.paymentMethods.get(typeof body.payment_method === 'string' ? body.payment_method : '');
      if (!pm) return notFound('payment_method');
      // Stripe's rule: a PaymentMethod attached to a customer is used only with that customer.
      if (body.customer !== pm.customer)
        return [
          400,
          {
            error: {
              type: 'invalid_request_error',
              code: 'payment_method_unexpected_state',
              message: 'The provided PaymentMethod belongs to another customer',
            },
          },
        ];
      card = { number: pm.number };
    }
    const number = String(card.number);
    const decline = DECLINES[number];
    const cvcSent = card.cvc !== undefined;
    const pi: Json = {
      id: id('pi'),
      object: 'payment_intent',
      amount: Number(body.amount),
      amount_received: 0,
      currency: body.currency,
      capture_method: body.capture_method,
      metadata: body.metadata ?? {},
      status: 'requires_capture',
      last_payment_error: null,
      next_action: null,
      latest_charge: null,
    };
    this.intents.set(String(pi.id), pi);
    if (decline && !(number === '4000000000000127' && !cvcSent)) {
      pi.status = 'requires_payment_method';
      const error = { type: 'card_error', ...decline, payment_intent: pi };
      pi.last_payment_error = { type: 'card_error', ...decline };
      return [402, { error }];
    }
    if (REQUIRES_ACTION.includes(number)) {
      pi.status = 'requires_action';
      pi.return_url = body.return_url;
      pi.next_action = {
        type: 'redirect_to_url',
        redirect_to_url: { url: `${this.baseUrl}/3ds/${String(pi.id)}`, return_url: body.return_url },
      };
      return [200, this.view(pi, body)];
    }
    this.charge(pi, number, cvcSent);
    return [200, this.view(pi, body)];
  }

  /** The buyer finished the issuer's 3-D Secure page: the PaymentIntent authorized, or declined. */
  completeChallenge(piId: string, authenticated: boolean): void {
    const pi = this.intents.get(piId)!;
    pi.next_action = null;
    if (!authenticated) {
      pi.status = 'requires_payment_method';
      pi.last_payment_error = { type: 'card_error', code: 'payment_intent_authentication_failure' };
      return;
    }
    this.charge(pi, '0000', false);
  }

  private charge(pi: Json, number: string, cvcSent: boolean): void {
    pi.latest_charge = {
      id: id('ch'),
      object: 'charge',
      payment_method_details: {
        type: 'card',
        card: {
          last4: number.slice(-4),
          network_transaction_id: String(100000000000000 + Math.floor(Math.random() * 8e14)),
          checks: { cvc_check: cvcSent ? 'pass' : null },
        },
      },
    };
    if (pi.capture_method === 'automatic') {
      pi.status = 'succeeded';
      pi.amount_received = pi.amount;
    } else pi.status = 'requires_capture';
  }

  private createSetup(body: Json): [number, Json] {
    const card = ((body.payment_method_data as Json | undefined)?.card ?? {}) as Json;
    const decline = DECLINES[String(card.number)];
    const seti = { id: id('seti'), object: 'setup_intent', status: 'succeeded', last_setup_error: null };
    if (decline) return [402, { error: { type: 'card_error', ...decline, setup_intent: seti } }];
    return [200, seti];
  }

  /** The PaymentIntent as answered: `latest_charge` an id unless `expand[]` names it. */
  private view(pi: Json, params: Json): Json {
    const expand = Object.values((params.expand ?? {}) as Json);
    const charge = pi.latest_charge as Json | null;
    return { ...pi, latest_charge: expand.includes('latest_charge') ? charge : (charge?.id ?? null) };
  }
}

function notFound(what: string): [number, Json] {
  return [
    404,
    { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such ${what}` } },
  ];
}

function unexpectedState(pi: Json): [number, Json] {
  return [
    400,
    {
      error: {
        type: 'invalid_request_error',
        code: 'payment_intent_unexpected_state',
        message: `This PaymentIntent's status is ${String(pi.status)}`,
      },
    },
  ];
}
