import { createHmac, randomBytes, randomInt } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adyenFormViolations } from './fake-network-token-forms';

/** One request the fake received, as Adyen would see it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

export interface Amount {
  value: number;
  currency: string;
}

/** One item of Adyen's standard webhook (`notificationItems[].NotificationRequestItem`). */
export interface NotificationItem {
  amount: Amount;
  eventCode: string;
  eventDate: string;
  merchantAccountCode: string;
  merchantReference: string;
  originalReference?: string;
  pspReference: string;
  reason?: string;
  success: 'true' | 'false';
  paymentMethod?: string;
  operations?: string[];
  additionalData?: Record<string, string>;
}

type Json = Record<string, unknown>;

/** Named test cards (all pass the Luhn check, so they get past a client's own card-number validation). */
export const ADYEN_CARDS = {
  /** Visa, Authorised (any number that is not in the tables below is Authorised too). */
  visa: '4111111145551142',
  /** Mastercard, Authorised. */
  mastercard: '5555341244441115',
  /** American Express, Authorised. */
  amex: '370000000000002',
  /** Refused, refusalReasonCode '2' (Refused). */
  refused: '4100000000000027',
  /** Refused, refusalReasonCode '12' (Not enough balance). */
  notEnoughBalance: '4100000000000126',
  /** Refused, refusalReasonCode '6' (Expired Card); a past expiry date on any card gives the same. */
  expired: '4100000000000068',
  /** Refused, refusalReasonCode '24' (CVC Declined). */
  cvcDeclined: '4100000000000241',
  /** resultCode Error, refusalReasonCode '4' (Acquirer Error). */
  acquirerError: '4100000000000043',
  /** No payment: 422 ServiceError, errorCode '101' (Invalid card number). */
  invalidNumber: '4100000000001017',
  /** Adyen's 3-D Secure 2 Visa test card: RedirectShopper, then the outcome given to completeChallenge(). */
  threeDSVisa: '4917610000000000',
  /** Adyen's 3-D Secure 2 Mastercard test card: as threeDSVisa. */
  threeDSMastercard: '5454545454545454',
} as const;

/** Cards that do not authorise: what `/payments` answers (200) for each. */
export const CARD_REFUSALS: Record<
  string,
  { resultCode: 'Refused' | 'Error'; refusalReason: string; refusalReasonCode: string }
> = {
  [ADYEN_CARDS.refused]: { resultCode: 'Refused', refusalReason: 'Refused', refusalReasonCode: '2' },
  [ADYEN_CARDS.notEnoughBalance]: {
    resultCode: 'Refused',
    refusalReason: 'Not enough balance',
    refusalReasonCode: '12',
  },
  [ADYEN_CARDS.expired]: { resultCode: 'Refused', refusalReason: 'Expired Card', refusalReasonCode: '6' },
  [ADYEN_CARDS.cvcDeclined]: {
    resultCode: 'Refused',
    refusalReason: 'CVC Declined',
    refusalReasonCode: '24',
  },
  [ADYEN_CARDS.acquirerError]: {
    resultCode: 'Error',
    refusalReason: 'Acquirer Error',
    refusalReasonCode: '4',
  },
};

/** Cards that `/payments` rejects with a 422 ServiceError (no payment, no notification). */
export const CARD_ERRORS: Record<string, { errorCode: string; message: string }> = {
  [ADYEN_CARDS.invalidNumber]: { errorCode: '101', message: 'Invalid card number' },
};

/** Cards that need the shopper's 3-D Secure challenge (`RedirectShopper`). */
export const THREE_DS_CARDS: readonly string[] = [ADYEN_CARDS.threeDSVisa, ADYEN_CARDS.threeDSMastercard];

/** What the fake answers for a failed 3-D Secure challenge (the shopper failed it, or never completed it). */
export const THREE_DS_FAILURE = { refusalReason: '3D Not Authenticated', refusalReasonCode: '11' } as const;

/** The fake's record of one payment (keyed by its pspReference in `FakeAdyen.payments`). */
export interface FakeAdyenPayment {
  pspReference: string;
  merchantAccount: string;
  /** The merchant reference of the `/payments` request. */
  reference: string;
  amount: Amount;
  /** 'visa', 'mc', 'amex' or 'scheme'. */
  brand: string;
  last4: string;
  /** The `/payments` request body as received. */
  request: Json;
  /**
   * `pending3ds` (RedirectShopper, before `/payments/details`), `refused`, `error`, `authorised` (not captured),
   * `captured` (all or part of it: see capturedValue), `refunded` (all of the captured amount), `cancelled`.
   */
  status: 'pending3ds' | 'refused' | 'error' | 'authorised' | 'captured' | 'refunded' | 'cancelled';
  resultCode: string;
  refusalReason?: string;
  refusalReasonCode?: string;
  /** `additionalData.manualCapture: 'true'` or `captureDelayHours` > 0; otherwise the fake captures at once. */
  manualCapture: boolean;
  capturedValue: number;
  refundedValue: number;
  /** Every modification asked for, successful or not, in order. */
  modifications: {
    eventCode: string;
    pspReference: string;
    amount: Amount;
    reference?: string;
    success: boolean;
    reason?: string;
  }[];
  threeDS?: {
    url: string;
    redirectResult: string;
    /** Set by completeChallenge(). */
    authenticated?: boolean;
    /** The final answer once `/payments/details` ran (answered again on a repeat). */
    final?: Json;
  };
  /** The first answer of `/payments`. */
  response: Json;
}

/** 16 uppercase letters and digits, as Adyen's pspReferences. */
export function newPspReference(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let out = '';
  for (let i = 0; i < 16; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/**
 * Adyen's HMAC signature of a standard webhook item: HMAC-SHA256 with the hex-decoded key over
 * `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success`
 * (an absent field is an empty string), in base64.
 */
export function signNotification(item: NotificationItem, hmacKeyHex: string): string {
  const signed = [
    item.pspReference,
    item.originalReference ?? '',
    item.merchantAccountCode,
    item.merchantReference,
    String(item.amount?.value ?? ''),
    item.amount?.currency ?? '',
    item.eventCode,
    item.success,
  ].join(':');
  return createHmac('sha256', Buffer.from(hmacKeyHex, 'hex')).update(signed, 'utf8').digest('base64');
}

function brandOf(number: string): string {
  if (number.startsWith('4')) return 'visa';
  if (/^(5[1-5]|2[2-7])/.test(number)) return 'mc';
  if (/^3[47]/.test(number)) return 'amex';
  return 'scheme';
}

/** A field of a request body as a string (Prism has checked the types; the fake may be called without it). */
function text(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function cvcOf(paymentRequest: Json): string | undefined {
  return text((paymentRequest.paymentMethod as Json | undefined)?.cvc);
}

function serviceError(status: number, errorCode: string, message: string, errorType: string): [number, Json] {
  return [status, { status, errorCode, message, errorType, pspReference: newPspReference() }];
}

const unknownPayment = () =>
  serviceError(422, '167', 'Original pspReference required for this operation', 'validation');

/**
 * A fake Adyen Checkout API (v71) on 127.0.0.1 for tests: `/paymentMethods`, `/payments` (outcomes by test card
 * number, 3-D Secure by redirect), `/payments/details`, captures, cancels, refunds and the standalone cancel by
 * merchant reference; JSON bodies, the `X-API-Key` header, Idempotency-Key honoured (the same key, for the same
 * API key, answers the first response again), every API request recorded, and the standard webhooks Adyen would
 * send queued, to be delivered signed with sendNotifications(). Paths have no `/v71` prefix (as in Adyen's
 * OpenAPI document, so that Prism can stand in front: test/support/prism.ts).
 */
export class FakeAdyen {
  readonly requests: RecordedRequest[] = [];
  /** What is wrong with a network token's form beyond the document (fake-network-token-forms.ts): expected empty. */
  readonly formViolations: string[] = [];
  readonly payments = new Map<string, FakeAdyenPayment>();
  /** API keys the fake accepts (`X-API-Key`); others get a 401 ServiceError. */
  readonly apiKeys = new Set<string>(['adyen_test_key']);
  /** Merchant accounts the API keys may use; others get a 403 ServiceError. */
  readonly merchantAccounts = new Set<string>(['TestMerchant']);
  /** Notifications not yet delivered (sendNotifications() removes them once the receiver accepted them). */
  readonly queued: NotificationItem[] = [];
  /** Notifications the receiver accepted (`[accepted]`), as sent (signed). */
  readonly delivered: NotificationItem[] = [];
  /** The next N POSTs are performed but never answered (the connection hangs until the client's time-out). */
  hangNext = 0;
  /** The next N requests answer 500 ServiceError without doing anything. */
  failNext = 0;
  /**
   * Raw answers for the next requests (after the API key check), in order, instead of what the fake would do:
   * to see how a client copes with an unexpected answer (and, behind Prism, that Prism reports it).
   */
  readonly respondNext: { status: number; body: unknown }[] = [];
  /** Whether a RedirectShopper answer carries the pspReference (Adyen's card example does; the field is optional). */
  pspReferenceOnRedirect = true;
  private readonly idempotent = new Map<string, { status: number; body: Json }>();
  private readonly failingModifications = new Map<string, string[]>();
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

  /** A captured payment made at Adyen without us (before a migration): its pspReference, which relay refunds name. */
  seedPayment(value: number, currency = 'EUR', merchantAccount = 'TestMerchant'): string {
    const p: FakeAdyenPayment = {
      pspReference: newPspReference(),
      merchantAccount,
      reference: 'order-before-the-migration',
      amount: { value, currency },
      brand: 'visa',
      last4: '1111',
      request: {},
      status: 'captured',
      resultCode: 'Authorised',
      manualCapture: false,
      capturedValue: value,
      refundedValue: 0,
      modifications: [],
      response: {},
    };
    this.payments.set(p.pspReference, p);
    return p.pspReference;
  }

  posts(path?: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && (!path || path.test(r.path)));
  }

  /** The most recent payment with this merchant reference, or with this pspReference. */
  payment(reference: string): FakeAdyenPayment | undefined {
    const direct = this.payments.get(reference);
    if (direct) return direct;
    return [...this.payments.values()].reverse().find((p) => p.reference === reference);
  }

  /** The shopper finished the issuer's 3-D Secure challenge (reference: the merchant reference or pspReference). */
  completeChallenge(reference: string, authenticated: boolean): void {
    const p = this.payment(reference);
    if (!p?.threeDS) throw new Error(`FakeAdyen: no 3-D Secure payment ${reference}`);
    p.threeDS.authenticated = authenticated;
  }

  /**
   * The `redirectResult` Adyen appends to the returnUrl when the shopper comes back, for the client to send in
   * `/payments/details`. Without completeChallenge() first, the payment is refused as not authenticated.
   */
  redirectResult(reference: string): string {
    const p = this.payment(reference);
    if (!p?.threeDS) throw new Error(`FakeAdyen: no 3-D Secure payment ${reference}`);
    return p.threeDS.redirectResult;
  }

  /** The next modification notification of this kind (CAPTURE, REFUND, CANCELLATION, TECHNICAL_CANCEL) fails. */
  failNextModification(eventCode: string, reason = 'Modification failed'): void {
    const list = this.failingModifications.get(eventCode) ?? [];
    list.push(reason);
    this.failingModifications.set(eventCode, list);
  }

  /**
   * Queues any notification item (CAPTURE_FAILED, REFUND_FAILED, CHARGEBACK...). The payment named by
   * originalReference (or pspReference) fills merchantAccountCode, merchantReference and amount when absent.
   */
  queueEvent(
    item: Partial<NotificationItem> & Pick<NotificationItem, 'eventCode' | 'pspReference'>,
  ): NotificationItem {
    const p = this.payments.get(item.originalReference ?? '') ?? this.payments.get(item.pspReference);
    const full: NotificationItem = {
      amount: p ? { ...p.amount } : { currency: 'EUR', value: 0 },
      eventDate: new Date().toISOString(),
      merchantAccountCode: p?.merchantAccount ?? [...this.merchantAccounts][0],
      merchantReference: p?.reference ?? '',
      success: 'true',
      ...item,
    };
    this.queued.push(full);
    return full;
  }

  /**
   * POSTs `{live: 'false', notificationItems: [{NotificationRequestItem}, ...]}` (the queued items, or `items`) to
   * `url`, each item signed with the hex HMAC key. `tamper` changes a signed field (the amount) after signing.
   * Items leave the queue only when the answer is 200 `[accepted]` and they were not tampered with.
   */
  async sendNotifications(
    url: string,
    hmacKeyHex: string,
    opts: { items?: NotificationItem[]; tamper?: boolean; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: string }> {
    const items = opts.items ?? [...this.queued];
    if (items.length === 0) throw new Error('FakeAdyen: no notification to send');
    const signed = items.map((item) => {
      const out: NotificationItem = {
        ...item,
        additionalData: { ...item.additionalData, hmacSignature: signNotification(item, hmacKeyHex) },
      };
      if (opts.tamper) out.amount = { ...item.amount, value: item.amount.value + 1 };
      return out;
    });
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...opts.headers },
      body: JSON.stringify({
        live: 'false',
        notificationItems: signed.map((NotificationRequestItem) => ({ NotificationRequestItem })),
      }),
    });
    const body = await res.text();
    if (res.status === 200 && body.trim() === '[accepted]' && !opts.tamper) {
      this.delivered.push(...signed);
      for (const item of items) {
        const i = this.queued.indexOf(item);
        if (i >= 0) this.queued.splice(i, 1);
      }
    }
    return { status: res.status, body };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    const payload = Buffer.concat(chunks).toString('utf8');
    const send = (status: number, body: Json) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname.startsWith('/3ds/')) return this.challengePage(req.method ?? 'GET', url, payload, res);

    let body: Json = {};
    let unparsable = false;
    try {
      if (payload) body = JSON.parse(payload) as Json;
    } catch {
      unparsable = true;
    }
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      headers: req.headers,
      body,
    };
    this.requests.push(recorded);
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey !== 'string' || !this.apiKeys.has(apiKey))
      return send(401, {
        status: 401,
        errorCode: '000',
        message: 'HTTP Status Response - Unauthorized',
        errorType: 'security',
      });
    const idempotencyKey = req.headers['idempotency-key'];
    const stored = typeof idempotencyKey === 'string' ? `${apiKey}\u0000${idempotencyKey}` : undefined;
    if (recorded.method === 'POST' && stored && this.idempotent.has(stored)) {
      const first = this.idempotent.get(stored)!;
      return send(first.status, first.body);
    }
    const raw = this.respondNext.shift();
    if (raw) {
      res.writeHead(raw.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(raw.body));
      return;
    }
    if (this.failNext > 0) {
      this.failNext--;
      return send(...serviceError(500, '000', 'Internal error', 'internal'));
    }
    let [status, answer] = serviceError(400, '702', 'Unexpected input, expected a JSON object', 'validation');
    if (!unparsable) {
      try {
        [status, answer] = this.route(recorded);
      } catch (error) {
        // A body Prism would have refused (the fake called directly): a validation error rather than a crash.
        [status, answer] = serviceError(
          422,
          '000',
          `Invalid request: ${(error as Error).message}`,
          'validation',
        );
      }
    }
    if (recorded.method === 'POST' && stored) this.idempotent.set(stored, { status, body: answer });
    if (recorded.method === 'POST' && this.hangNext > 0) {
      this.hangNext--;
      return; // performed, never answered
    }
    send(status, answer);
  }

  private route(r: RecordedRequest): [number, Json] {
    if (r.method !== 'POST') return serviceError(404, '000', 'Not found', 'validation');
    const b = r.body;
    if (r.path === '/payments/details') return this.details(b);
    if (!this.merchantAccounts.has(text(b.merchantAccount) ?? ''))
      return serviceError(403, '901', 'Invalid Merchant Account', 'security');
    if (r.path === '/paymentMethods')
      return [
        200,
        { paymentMethods: [{ type: 'scheme', name: 'Cards', brands: ['visa', 'mc', 'amex', 'maestro'] }] },
      ];
    if (r.path === '/payments') return this.pay(b);
    if (r.path === '/cancels') return this.standaloneCancel(b);
    const m = /^\/payments\/([^/]+)\/(captures|cancels|refunds)$/.exec(r.path);
    if (m) {
      const p = this.payments.get(m[1]);
      if (!p || p.merchantAccount !== b.merchantAccount) return unknownPayment();
      if (m[2] === 'captures') return this.capture(p, b);
      if (m[2] === 'cancels') return this.cancel(p, b);
      return this.refund(p, b);
    }
    return serviceError(404, '000', 'Not found', 'validation');
  }

  /**
   * A card the merchant stored at Adyen for a shopper (a token from before the vault): its
   * `storedPaymentMethodId`, which `/payments` takes with the same `shopperReference`.
   */
  storePaymentMethod(
    shopperReference: string,
    card: { number: string; expiryMonth: string; expiryYear: string },
  ): string {
    const id = randomBytes(8).toString('hex').toUpperCase();
    this.storedPaymentMethods.set(id, { shopperReference, ...card });
    return id;
  }

  readonly storedPaymentMethods = new Map<
    string,
    { shopperReference: string; number: string; expiryMonth: string; expiryYear: string }
  >();

  private pay(b: Json): [number, Json] {
    this.formViolations.push(...adyenFormViolations(b));
    let method = (b.paymentMethod ?? {}) as Json;
    if (method.storedPaymentMethodId !== undefined) {
      if (method.number !== undefined || method.cvc !== undefined)
        this.formViolations.push('storedPaymentMethodId with card data');
      if (b.shopperInteraction !== 'ContAuth' || b.recurringProcessingModel === undefined)
        this.formViolations.push('storedPaymentMethodId outside ContAuth with a recurringProcessingModel');
      const stored = this.storedPaymentMethods.get(text(method.storedPaymentMethodId) ?? '');
      // Adyen's answer to a token it does not hold for that shopper.
      if (!stored || stored.shopperReference !== b.shopperReference)
        return serviceError(422, '800', 'Contract not found', 'validation');
      method = {
        ...method,
        number: stored.number,
        expiryMonth: stored.expiryMonth,
        expiryYear: stored.expiryYear,
      };
    }
    const number = text(method.number) ?? '';
    const cardError = CARD_ERRORS[number];
    if (cardError) return serviceError(422, cardError.errorCode, cardError.message, 'validation');
    const amount = b.amount as Amount;
    const additional = (b.additionalData ?? {}) as Json;
    const p: FakeAdyenPayment = {
      pspReference: newPspReference(),
      merchantAccount: text(b.merchantAccount) ?? '',
      reference: text(b.reference) ?? '',
      amount: { value: amount.value, currency: amount.currency },
      brand: brandOf(number),
      last4: number.slice(-4),
      request: b,
      status: 'pending3ds',
      resultCode: 'RedirectShopper',
      manualCapture: additional.manualCapture === 'true' || Number(b.captureDelayHours ?? 0) > 0,
      capturedValue: 0,
      refundedValue: 0,
      modifications: [],
      response: {},
    };
    this.payments.set(p.pspReference, p);

    if (THREE_DS_CARDS.includes(number)) {
      p.threeDS = {
        url: `${this.baseUrl}/3ds/${p.pspReference}`,
        redirectResult: randomBytes(36).toString('base64url'),
      };
      p.response = {
        resultCode: 'RedirectShopper',
        ...(this.pspReferenceOnRedirect ? { pspReference: p.pspReference } : {}),
        merchantReference: p.reference,
        action: { type: 'redirect', method: 'GET', url: p.threeDS.url, paymentMethodType: 'scheme' },
      };
      return [200, p.response];
    }
    const month = Number(method.expiryMonth);
    const year = Number(method.expiryYear);
    const now = new Date();
    const expired = year < now.getFullYear() || (year === now.getFullYear() && month < now.getMonth() + 1);
    const refusal = CARD_REFUSALS[number] ?? (expired ? CARD_REFUSALS[ADYEN_CARDS.expired] : undefined);
    p.response = refusal ? this.refuse(p, refusal) : this.authorise(p, cvcOf(b));
    return [200, p.response];
  }

  private authorise(p: FakeAdyenPayment, cvc: string | undefined, extra: Record<string, string> = {}): Json {
    p.resultCode = 'Authorised';
    p.status = p.manualCapture ? 'authorised' : 'captured';
    if (!p.manualCapture) p.capturedValue = p.amount.value;
    const additionalData: Record<string, string> = {
      authCode: String(randomInt(100000, 1000000)),
      networkTxReference: String(randomInt(100000000, 1000000000)) + String(randomInt(100000, 1000000)),
      ...(cvc === undefined ? {} : { cvcResult: cvc === '000' ? '2 Does not match' : '1 Matches' }),
      ...extra,
    };
    this.queueEvent({
      eventCode: 'AUTHORISATION',
      pspReference: p.pspReference,
      success: 'true',
      paymentMethod: p.brand,
      operations: p.manualCapture ? ['CANCEL', 'CAPTURE', 'REFUND'] : ['REFUND'],
    });
    return {
      resultCode: 'Authorised',
      pspReference: p.pspReference,
      merchantReference: p.reference,
      amount: { ...p.amount },
      paymentMethod: { type: 'scheme', brand: p.brand },
      additionalData,
    };
  }

  private refuse(
    p: FakeAdyenPayment,
    refusal: { resultCode: 'Refused' | 'Error'; refusalReason: string; refusalReasonCode: string },
  ): Json {
    Object.assign(p, refusal, { status: refusal.resultCode === 'Error' ? 'error' : 'refused' });
    this.queueEvent({
      eventCode: 'AUTHORISATION',
      pspReference: p.pspReference,
      success: 'false',
      reason: refusal.refusalReason,
      paymentMethod: p.brand,
    });
    return {
      resultCode: refusal.resultCode,
      pspReference: p.pspReference,
      merchantReference: p.reference,
      amount: { ...p.amount },
      refusalReason: refusal.refusalReason,
      refusalReasonCode: refusal.refusalReasonCode,
    };
  }

  private details(b: Json): [number, Json] {
    const redirectResult = (b.details as Json | undefined)?.redirectResult;
    const p = [...this.payments.values()].find(
      (x) => x.threeDS && x.threeDS.redirectResult === redirectResult,
    );
    if (!p?.threeDS) return serviceError(422, '000', 'Invalid redirectResult', 'validation');
    if (!p.threeDS.final) {
      p.threeDS.final = p.threeDS.authenticated
        ? this.authorise(p, cvcOf(p.request), { threeDAuthenticated: 'true', liabilityShift: 'true' })
        : this.refuse(p, { resultCode: 'Refused', ...THREE_DS_FAILURE });
    }
    return [200, p.threeDS.final];
  }

  /** Applies a modification (or fails it, when failNextModification() asked) and queues its notification. */
  private modify(
    p: FakeAdyenPayment,
    eventCode: string,
    amount: Amount,
    reference: string | undefined,
    problem: string | undefined,
    apply: () => void,
    notification: Partial<NotificationItem> = {},
  ): string {
    const pspReference = newPspReference();
    const failure = problem ?? this.failingModifications.get(eventCode)?.shift();
    if (!failure) apply();
    p.modifications.push({ eventCode, pspReference, amount, reference, success: !failure, reason: failure });
    this.queueEvent({
      eventCode,
      pspReference,
      originalReference: p.pspReference,
      merchantAccountCode: p.merchantAccount,
      merchantReference: reference ?? p.reference,
      amount: { ...amount },
      success: failure ? 'false' : 'true',
      ...(failure ? { reason: failure } : {}),
      paymentMethod: p.brand,
      ...notification,
    });
    return pspReference;
  }

  private capture(p: FakeAdyenPayment, b: Json): [number, Json] {
    const amount = b.amount as Amount;
    const reference = text(b.reference);
    const problem =
      p.status !== 'authorised' && p.status !== 'captured'
        ? `Payment is ${p.status}`
        : amount.currency !== p.amount.currency
          ? 'Currency mismatch'
          : p.capturedValue + amount.value > p.amount.value
            ? 'Amount exceeds the authorised amount'
            : undefined;
    const psp = this.modify(p, 'CAPTURE', amount, reference, problem, () => {
      p.capturedValue += amount.value;
      p.status = 'captured';
    });
    return [
      201,
      {
        status: 'received',
        pspReference: psp,
        paymentPspReference: p.pspReference,
        merchantAccount: p.merchantAccount,
        amount: { value: amount.value, currency: amount.currency },
        ...(reference === undefined ? {} : { reference }),
      },
    ];
  }

  private cancel(p: FakeAdyenPayment, b: Json): [number, Json] {
    const reference = text(b.reference);
    const problem = p.status === 'authorised' ? undefined : `Payment is ${p.status}`;
    const psp = this.modify(p, 'CANCELLATION', p.amount, reference, problem, () => {
      p.status = 'cancelled';
    });
    return [
      201,
      {
        status: 'received',
        pspReference: psp,
        paymentPspReference: p.pspReference,
        merchantAccount: p.merchantAccount,
        ...(reference === undefined ? {} : { reference }),
      },
    ];
  }

  private refund(p: FakeAdyenPayment, b: Json): [number, Json] {
    const amount = b.amount as Amount;
    const reference = text(b.reference);
    const problem =
      p.status !== 'captured'
        ? `Payment is ${p.status}`
        : amount.currency !== p.amount.currency
          ? 'Currency mismatch'
          : p.refundedValue + amount.value > p.capturedValue
            ? 'Amount exceeds the captured amount'
            : undefined;
    const psp = this.modify(p, 'REFUND', amount, reference, problem, () => {
      p.refundedValue += amount.value;
      if (p.refundedValue === p.capturedValue) p.status = 'refunded';
    });
    return [
      201,
      {
        status: 'received',
        pspReference: psp,
        paymentPspReference: p.pspReference,
        merchantAccount: p.merchantAccount,
        amount: { value: amount.value, currency: amount.currency },
        ...(reference === undefined ? {} : { reference }),
      },
    ];
  }

  /**
   * `/cancels`: cancels the most recent payment with this merchant reference, and queues TECHNICAL_CANCEL (the
   * webhook Adyen documents for this endpoint) with merchantReference = the payment's reference and
   * originalReference = its pspReference (absent, and success 'false', when no such payment exists).
   */
  private standaloneCancel(b: Json): [number, Json] {
    const paymentReference = text(b.paymentReference) ?? '';
    const reference = text(b.reference);
    const p = [...this.payments.values()]
      .reverse()
      .find((x) => x.reference === paymentReference && x.merchantAccount === b.merchantAccount);
    let psp: string;
    if (p) {
      const problem = p.status === 'authorised' ? undefined : `Payment is ${p.status}`;
      psp = this.modify(
        p,
        'TECHNICAL_CANCEL',
        p.amount,
        reference,
        problem,
        () => {
          p.status = 'cancelled';
        },
        { merchantReference: paymentReference },
      );
    } else {
      psp = newPspReference();
      this.queueEvent({
        eventCode: 'TECHNICAL_CANCEL',
        pspReference: psp,
        merchantAccountCode: text(b.merchantAccount) ?? '',
        merchantReference: paymentReference,
        success: 'false',
        reason: 'Original payment not found',
      });
    }
    return [
      201,
      {
        status: 'received',
        pspReference: psp,
        paymentReference,
        merchantAccount: text(b.merchantAccount) ?? '',
        ...(reference === undefined ? {} : { reference }),
      },
    ];
  }

  /**
   * The issuer's challenge page (GET), and its two buttons (POST outcome=authenticated|failed): the outcome is
   * recorded as completeChallenge() does and the shopper is sent back to the returnUrl with `redirectResult`.
   */
  private challengePage(method: string, url: URL, form: string, res: ServerResponse): void {
    const psp = url.pathname.slice('/3ds/'.length);
    const p = this.payments.get(psp);
    if (!p?.threeDS) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('unknown payment');
      return;
    }
    if (method === 'POST') {
      p.threeDS.authenticated = new URLSearchParams(form).get('outcome') === 'authenticated';
      let back: URL;
      try {
        back = new URL(text(p.request.returnUrl) ?? '');
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end('the payment has no valid returnUrl');
        return;
      }
      back.searchParams.set('redirectResult', p.threeDS.redirectResult);
      res.writeHead(303, { location: back.toString() });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><html><head><title>3-D Secure</title></head><body>` +
        `<h1>Fake issuer: 3-D Secure</h1><p>Payment ${p.pspReference}: ${p.amount.currency} ${p.amount.value}</p>` +
        `<form method="post"><button name="outcome" value="authenticated">Authenticate</button>` +
        `<button name="outcome" value="failed">Fail</button></form></body></html>`,
    );
  }
}
