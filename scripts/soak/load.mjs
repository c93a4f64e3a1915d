/*
 * The soak's load: a few clients, each picking its next operation from a fixed mix, through the balancer.
 * Tokenizes of 1 card and of 100 (distinct Luhn-valid numbers, each with a CVC), token reads, searches,
 * proxy requests that detokenize a card number into the body, and payments against the Stripe fake
 * (authorize, then most are captured and some refunded). What was acknowledged is kept in `book`: the
 * auditor checks the service and the fake against it afterwards.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { OperationFailed, sleep } from './client.mjs';

/** Stripe's test numbers that the fake declines or challenges: never generated. */
const SPECIAL = new Set([
  '4000000000000002',
  '4000000000009995',
  '4000000000000069',
  '4000000000000127',
  '4000000000000119',
  '4000002500003155',
  '4000000000003220',
]);

function luhnDigit(partial) {
  let sum = 0;
  for (let i = 0; i < partial.length; i++) {
    let d = Number(partial[partial.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}

/** Card data no earlier call answered: a Visa number (4, 14 random digits, the check digit), expiry, CVC. */
export function cardMaker() {
  const seen = new Set();
  return () => {
    for (;;) {
      let partial = '4';
      for (let i = 0; i < 14; i++) partial += String(randomInt(10));
      const number = partial + luhnDigit(partial);
      if (seen.has(number) || SPECIAL.has(number)) continue;
      seen.add(number);
      return {
        number,
        expiration_month: randomInt(1, 13),
        expiration_year: randomInt(2030, 2035),
        cvc: String(randomInt(100, 1000)),
      };
    }
  };
}

/** What the client was told: tokens, batches and transactions, each only once a 2xx said so. */
export function newBook(run) {
  return {
    run,
    /** token id -> { id, number, expiration_month, expiration_year, req, batch } */
    tokens: new Map(),
    /** Card tokens made one at a time (what reads, proxy requests and payments use). */
    singles: [],
    /** { req, ids } of each acknowledged 100-card tokenize. */
    batches: [],
    /**
     * transaction id -> { id, reconciliationId, amount, status, captured, refunds: [{ id, amount, status }],
     * told: what a capture or refund that failed was answered }
     */
    transactions: new Map(),
    /** Counts per operation: { done, failed, retried, replayed }. */
    operations: {},
    /** What the client noticed that is no finding by itself (a payment that failed, no money moved). */
    notes: [],
  };
}

const pick = (list) => list[randomInt(list.length)];
/** The last 4 digits of a masked card as answered (`data` in a tokenize's answer, `mask` in a read's). */
const last4 = (token) => String(token?.data?.number ?? token?.mask?.number ?? '').slice(-4);

/** The mix: weights of each operation (a payment is 2 or 3 requests: authorize, capture, refund). */
const MIX = [
  ['tokenize', 24],
  ['tokenize100', 2],
  ['read', 24],
  ['search', 10],
  ['proxy', 16],
  ['payment', 24],
];
const TOTAL = MIX.reduce((sum, [, w]) => sum + w, 0);

function nextOperation() {
  let n = randomInt(TOTAL);
  for (const [name, weight] of MIX) {
    if (n < weight) return name;
    n -= weight;
  }
  return MIX[0][0];
}

/**
 * Runs the load until `stop()`: `clients` loops, each sending one operation at a time, and the probe.
 * ctx: { client (Client), book, recorder, connectionId, proxyKey }.
 */
export function startLoad(ctx, { clients = 4 } = {}) {
  const newCard = cardMaker();
  let running = true;
  const count = (name, field) => {
    const c = (ctx.book.operations[name] ??= { done: 0, failed: 0, retried: 0, replayed: 0 });
    c[field]++;
  };
  const answered = (name, res) => {
    count(name, 'done');
    if (res.attempts > 1) count(name, 'retried');
    if (res.replayed) count(name, 'replayed');
    return res;
  };
  const send = async (name, request) => answered(name, await ctx.client.send(name, request));
  const operations = {
    tokenize: () => tokenize(ctx, send, [newCard()]),
    tokenize100: () => tokenize(ctx, send, Array.from({ length: 100 }, newCard)),
    read: () => read(ctx, send),
    search: () => search(ctx, send),
    proxy: () => proxy(ctx, send),
    payment: () => payment(ctx, send),
  };
  const loop = async () => {
    // Cards first, so that reads, proxy requests and payments have some.
    while (running && ctx.book.singles.length < 5) await operations.tokenize().catch(() => sleep(200));
    while (running) {
      const name = nextOperation();
      try {
        await operations[name]();
      } catch (error) {
        count(name, 'failed');
        if (!(error instanceof OperationFailed))
          ctx.recorder.inconsistent(name, String(error?.stack ?? error));
      }
    }
  };
  const done = Promise.all([...Array.from({ length: clients }, loop), probe(ctx, () => running)]);
  return {
    /** Stops starting operations; answers once every operation under way has ended. */
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/**
 * The probe: a token read with a fresh request every 200 ms, one attempt each, never retried (so never
 * held up by a key another request holds): when the service answers again after a fault. Its attempts
 * are recorded as `probe`; a failure is no operation failed.
 */
async function probe(ctx, running) {
  const { recorder, client } = ctx;
  while (running()) {
    await sleep(200);
    const card = ctx.book.singles.length ? pick(ctx.book.singles) : undefined;
    if (!card) continue;
    const start = recorder.now();
    let outcome;
    try {
      const res = await fetch(`${client.base}/tokens/${card.id}`, {
        headers: { 'BT-API-KEY': client.key },
        signal: AbortSignal.timeout(5_000),
      });
      await res.arrayBuffer();
      outcome = String(res.status);
    } catch (error) {
      outcome = error?.cause?.code ?? error?.name ?? 'error';
    }
    const end = recorder.now();
    const ok = outcome === '200';
    recorder.attempts.push({ kind: 'probe', start, end, outcome, ok, since: end });
  }
}

async function tokenize(ctx, send, cards) {
  const { book } = ctx;
  const one = cards.length === 1;
  const req = randomUUID();
  const body = cards.map((data) => ({ type: 'card', data, metadata: { soak: book.run, req } }));
  const res = await send(one ? 'tokenize' : 'tokenize100', {
    method: 'POST',
    path: '/tokenize',
    body: one ? body[0] : body,
    key: req,
  });
  const tokens = one ? [res.json] : res.json;
  if (!Array.isArray(tokens) || tokens.length !== cards.length) {
    ctx.recorder.inconsistent(
      'tokenize',
      `request ${req}: ${cards.length} cards, answered ${res.text.slice(0, 200)}`,
    );
    return;
  }
  tokens.forEach((token, i) => {
    const card = cards[i];
    if (last4(token) !== card.number.slice(-4))
      ctx.recorder.inconsistent(
        'tokenize',
        `token ${token.id}: answered ${JSON.stringify(token).slice(0, 200)} for a card ending ${card.number.slice(-4)}`,
      );
    const entry = { id: token.id, ...card, req, batch: !one };
    book.tokens.set(token.id, entry);
    if (one) book.singles.push(entry);
  });
  if (!one) book.batches.push({ req, ids: tokens.map((t) => t.id) });
}

async function read(ctx, send) {
  const card = pick(ctx.book.singles);
  const res = await send('read', { path: `/tokens/${card.id}` });
  if (res.json?.id !== card.id || last4(res.json) !== card.number.slice(-4))
    ctx.recorder.inconsistent('read', `token ${card.id}: answered ${res.text.slice(0, 200)}`);
}

async function search(ctx, send) {
  const { book } = ctx;
  const batch = book.batches.length && randomInt(2) ? pick(book.batches) : undefined;
  const req = batch?.req ?? pick(book.singles).req;
  const expected = batch ? batch.ids.length : 1;
  const res = await send('search', {
    method: 'POST',
    path: '/tokens/search',
    body: { query: `metadata.req:"${req}"`, size: 5 },
  });
  const total = res.json?.pagination?.total_items;
  if (total !== expected)
    ctx.recorder.inconsistent(
      'search',
      `metadata.req:"${req}": ${String(total)} tokens, ${expected} acknowledged`,
    );
}

async function proxy(ctx, send) {
  const card = pick(ctx.book.singles);
  const nonce = randomInt(1e9);
  const res = await send('proxy', {
    method: 'POST',
    path: '/proxy',
    headers: { 'BT-PROXY-KEY': ctx.proxyKey },
    body: { nonce, number: `{{ ${card.id} | json: '$.number' }}` },
    // Proxy requests ignore BT-IDEMPOTENCY-KEY (each call is sent): retried without one.
    idempotent: false,
  });
  if (res.json?.number !== card.number || res.json?.nonce !== nonce)
    ctx.recorder.inconsistent(
      'proxy',
      `token ${card.id}: the destination received ${res.text.slice(0, 200)}`,
    );
}

/** GETs a transaction until `settled(tx)` (a crash may leave it `processing` for the settlement job). */
async function until(ctx, send, id, settled) {
  for (let i = 0; ; i++) {
    const tx = (await send('poll', { path: `/orchestration/transactions/${id}` })).json;
    if (settled(tx) || i >= 120) return tx;
    await sleep(500);
  }
}

const PENDING = new Set(['processing', 'capture_pending']);

async function payment(ctx, send) {
  const { book } = ctx;
  const card = pick(book.singles);
  const amount = randomInt(100, 100_000);
  const created = await send('authorize', {
    method: 'POST',
    path: '/orchestration/transactions',
    body: { amount, currency: 'USD', token: card.id, connection_id: ctx.connectionId, intent: 'authorize' },
  });
  let tx = created.json;
  const record = {
    id: tx.id,
    reconciliationId: tx.reconciliation_id,
    amount,
    token: card.id,
    status: tx.status,
    captured: false,
    refunds: [],
  };
  book.transactions.set(tx.id, record);
  if (PENDING.has(tx.status)) tx = await until(ctx, send, tx.id, (t) => !PENDING.has(t.status));
  record.status = tx.status;
  if (tx.status !== 'authorization_succeeded') {
    // A payment may fail (no money moved: the auditor checks the fake); the client is told, and notes it.
    book.notes.push(
      `payment ${tx.id}: ${tx.status} (${String(tx.error_code)}); its authorize: ${created.history.join(', ')}`,
    );
    return;
  }
  // 1 in 10 stays authorized; of the others, half are refunded after their capture.
  const roll = randomInt(10);
  if (roll === 0) return;
  const captured = await send('capture', {
    method: 'POST',
    path: `/orchestration/transactions/${tx.id}/capture`,
    body: {},
  }).catch((error) => {
    record.told = { capture: `${error.outcome}: ${error.detail ?? ''}`.slice(0, 200) };
    throw error;
  });
  tx = captured.json;
  if (PENDING.has(tx.status)) tx = await until(ctx, send, tx.id, (t) => !PENDING.has(t.status));
  record.status = tx.status;
  record.captured = tx.status === 'capture_succeeded';
  if (!record.captured) {
    // A capture may fail (a crash before its vendor call: the auditor checks nothing was captured).
    book.notes.push(
      `capture of ${tx.id}: ${tx.status} (${String(tx.error_code)}); its attempts: ${captured.history.join(', ')}`,
    );
    return;
  }
  if (roll > 5) return;
  const refund = await send('refund', {
    method: 'POST',
    path: `/orchestration/transactions/${tx.id}/refunds`,
    body: {},
  }).catch((error) => {
    record.told = {
      refund: `${error.outcome}: ${error.detail ?? ''}`.slice(0, 200),
      attempts: error.history,
    };
    throw error;
  });
  record.refunds.push({ id: refund.json.id, amount: refund.json.amount, status: refund.json.status });
  if (refund.json.status !== 'succeeded')
    book.notes.push(
      `refund ${refund.json.id} of ${tx.id}: ${refund.json.status}; its attempts: ${refund.history.join(', ')}`,
    );
  if (refund.json.amount !== amount)
    ctx.recorder.inconsistent(
      'refund',
      `transaction ${tx.id}: refund of ${refund.json.amount}, captured ${amount}`,
    );
}
