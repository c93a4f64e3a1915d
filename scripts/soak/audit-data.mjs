/*
 * The auditor's checks of the data, after the load: every acknowledged token read back in clear (through
 * the reveal key) and counted in the database per request, and every acknowledged payment compared with
 * the Stripe fake's PaymentIntents and refunds, both ways.
 */
import pg from 'pg';

/** A finding: what kind (lost, duplicated, charged twice...), and the one line that says it. */
export const finding = (category, detail) => ({ category, detail });

const chunks = (list, size) =>
  Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));

/** Runs `work` over `items`, `width` at a time. */
export async function parallel(items, width, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

/**
 * Tokens: each acknowledged one read with the reveal key (`GET /tokens?id=...`, 100 at a time) and its
 * number and expiry compared; then the tokens of the run counted per request in the database: a request
 * acknowledged has exactly as many as it sent, and no token belongs to a request never acknowledged.
 */
export async function auditTokens({ auditor, book, recorder, directUrl, tenantId }) {
  const findings = [];
  const ids = [...book.tokens.keys()];
  let read = 0;
  await parallel(chunks(ids, 100), 4, async (chunk) => {
    const query = chunk.map((id) => `id=${encodeURIComponent(id)}`).join('&');
    const res = await auditor.send('audit read', { path: `/tokens?${query}&size=100` });
    const found = new Map((res.json?.data ?? []).map((t) => [t.id, t]));
    for (const id of chunk) {
      const want = book.tokens.get(id);
      const got = found.get(id);
      if (!got) {
        findings.push(
          finding('lost', `token ${id} (request ${want.req}) was acknowledged but cannot be read`),
        );
        continue;
      }
      read++;
      const data = got.data ?? {};
      if (
        data.number !== want.number ||
        data.expiration_month !== want.expiration_month ||
        data.expiration_year !== want.expiration_year
      )
        findings.push(
          finding(
            'wrong data',
            `token ${id}: reads …${String(data.number).slice(-4)} ${data.expiration_month}/${data.expiration_year}, ` +
              `acknowledged …${want.number.slice(-4)} ${want.expiration_month}/${want.expiration_year}`,
          ),
        );
    }
  });
  const perRequest = new Map();
  for (const token of book.tokens.values()) perRequest.set(token.req, (perRequest.get(token.req) ?? 0) + 1);
  const db = new pg.Client({ connectionString: directUrl });
  await db.connect();
  let stored = 0;
  const orphans = [];
  try {
    const { rows } = await db.query(
      `SELECT metadata->>'req' AS req, count(*)::int AS n,
              string_agg(to_char(created_at AT TIME ZONE 'UTC', 'HH24:MI:SS.MS'), ', ' ORDER BY created_at) AS made
         FROM tokens WHERE tenant_id = $1 AND metadata->>'soak' = $2 GROUP BY 1`,
      [tenantId, book.run],
    );
    const abandoned = new Set(recorder.abandoned.map((a) => a.key));
    for (const { req, n, made } of rows) {
      stored += n;
      const acknowledged = perRequest.get(req);
      if (acknowledged === undefined) {
        orphans.push({ req, n, abandoned: abandoned.has(req) });
        findings.push(
          finding(
            'unacknowledged',
            `request ${req} made ${n} token(s) but was never acknowledged` +
              (abandoned.has(req) ? ' (the client gave up on it)' : ''),
          ),
        );
      } else if (n !== acknowledged)
        findings.push(
          finding(
            n > acknowledged ? 'duplicated' : 'lost',
            `request ${req}: ${n} tokens stored, ${acknowledged} acknowledged` +
              (n <= 3 ? ` (created at ${made} UTC)` : '') +
              `; its attempts: ${recorder.retried.find((r) => r.key === req)?.attempts.join(', ') ?? 'one'}`,
          ),
        );
    }
  } finally {
    await db.end();
  }
  return { findings, summary: { acknowledged: ids.length, readBack: read, stored, orphans: orphans.length } };
}

const sum = (list, f) => list.reduce((total, x) => total + f(x), 0);

/** How long the audit waits for refunds answered `processing` to settle: the job takes them after a minute. */
const SETTLING_MS = 90_000;

/**
 * A refund answered `processing` (its request cut after Stripe refunded, and retried) is settled by the
 * settlement job a minute after its last change: the audit waits for the acknowledged ones still
 * `processing` (up to SETTLING_MS in all), so that it compares Stripe with their outcomes.
 */
async function refundsSettled(reader, book) {
  const deadline = Date.now() + SETTLING_MS;
  const waiting = [...book.transactions.values()].filter((tx) =>
    tx.refunds.some((r) => r.status === 'processing'),
  );
  for (const tx of waiting)
    for (;;) {
      const listed = (
        await reader.send('audit refunds', { path: `/orchestration/transactions/${tx.id}/refunds` })
      ).json;
      const pending = (listed?.data ?? listed ?? []).some((r) => r.status === 'processing');
      if (!pending || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
}

/**
 * Payments: each acknowledged transaction is one PaymentIntent (found by its reconciliation id) and is in
 * the state the client was told, amounts included; every PaymentIntent and refund at the fake belongs to
 * an acknowledged transaction or refund. Anything else is charged twice, lost, or unacknowledged.
 */
export async function auditPayments({ reader, book, stripe }) {
  await refundsSettled(reader, book);
  const findings = [];
  const intents = new Map();
  for (const pi of stripe.intents.values()) {
    const rid = pi.metadata?.reconciliation_id;
    intents.set(rid, [...(intents.get(rid) ?? []), pi]);
  }
  const refundsOf = new Map();
  for (const refund of stripe.refunds.values())
    refundsOf.set(refund.payment_intent, [...(refundsOf.get(refund.payment_intent) ?? []), refund]);
  const known = new Set();
  /** transaction id -> its status at the audit (the webhook check compares its last event with it). */
  const finalStatus = new Map();
  const summary = {
    acknowledged: book.transactions.size,
    captured: 0,
    refunded: 0,
    failed: 0,
    /** Acknowledged refunds that did not succeed (answered `processing` then failed, or failed). */
    refundsNotMade: [],
    intents: stripe.intents.size,
    refunds: stripe.refunds.size,
  };
  await parallel([...book.transactions.values()], 4, async (tx) => {
    known.add(tx.reconciliationId);
    const now = (await reader.send('audit transaction', { path: `/orchestration/transactions/${tx.id}` }))
      .json;
    finalStatus.set(tx.id, now.status);
    const pis = intents.get(tx.reconciliationId) ?? [];
    if (now.status !== tx.status)
      findings.push(
        finding('mismatch', `transaction ${tx.id}: now ${now.status}, acknowledged ${tx.status}`),
      );
    // A payment the client was told failed: no money may be held or taken for it.
    if (tx.status === 'authorization_failed' || tx.status === 'authorization_declined') {
      summary.failed++;
      const held = pis.filter((p) => p.status === 'requires_capture' || p.status === 'succeeded');
      if (held.length)
        findings.push(
          finding(
            'unacknowledged',
            `transaction ${tx.id}: the client was told ${tx.status}, but PaymentIntent ${held.map((p) => `${p.id} is ${p.status}`).join(', ')}`,
          ),
        );
      return;
    }
    if (pis.length === 0) {
      findings.push(
        finding('lost', `transaction ${tx.id}: acknowledged (${tx.status}) but no PaymentIntent at Stripe`),
      );
      return;
    }
    if (pis.length > 1)
      findings.push(
        finding(
          'charged twice',
          `transaction ${tx.id}: ${pis.length} PaymentIntents (${pis.map((p) => p.id).join(', ')})`,
        ),
      );
    const pi = pis[0];
    if (now.connection_transaction_id !== pi.id)
      findings.push(
        finding(
          'mismatch',
          `transaction ${tx.id}: connection_transaction_id ${now.connection_transaction_id}, PaymentIntent ${pi.id}`,
        ),
      );
    if (pi.amount !== tx.amount)
      findings.push(
        finding('mismatch', `transaction ${tx.id}: PaymentIntent of ${pi.amount}, acknowledged ${tx.amount}`),
      );
    const told = tx.told
      ? `; the client's ${Object.keys(tx.told)[0]} was answered ${Object.values(tx.told)[0]}`
      : '';
    const expected = tx.captured ? 'succeeded' : 'requires_capture';
    if (pi.status !== expected)
      findings.push(
        finding(
          tx.captured ? 'lost' : 'unacknowledged',
          `transaction ${tx.id}: PaymentIntent ${pi.id} is ${pi.status}, the client was told ${tx.status}${told}`,
        ),
      );
    if (tx.captured) summary.captured++;
    const refunds = refundsOf.get(pi.id) ?? [];
    // The acknowledged refunds as they stand now (one answered `processing` is settled later; one may fail).
    const listed = tx.refunds.length
      ? (await reader.send('audit refunds', { path: `/orchestration/transactions/${tx.id}/refunds` })).json
      : undefined;
    const standing = new Map((listed?.data ?? listed ?? []).map((r) => [r.id, r]));
    for (const r of tx.refunds)
      if (!standing.has(r.id))
        findings.push(finding('lost', `refund ${r.id} of transaction ${tx.id}: acknowledged, not listed`));
    const made = tx.refunds.filter((r) => standing.get(r.id)?.status === 'succeeded');
    for (const r of tx.refunds.filter((x) => !made.includes(x)))
      summary.refundsNotMade.push(
        `refund ${r.id} of ${tx.id}: answered ${r.status}, now ${standing.get(r.id)?.status ?? 'not listed'}`,
      );
    const acknowledged = sum(made, (r) => r.amount);
    const atStripe = sum(refunds, (r) => Number(r.amount));
    if (refunds.length !== made.length || atStripe !== acknowledged) {
      // More refunded than acknowledged: refunded twice, or a refund the client was told failed (or nothing).
      const category =
        refunds.length < made.length
          ? 'lost'
          : tx.told?.refund || made.length < tx.refunds.length
            ? 'unacknowledged'
            : 'refunded twice';
      findings.push(
        finding(
          category,
          `transaction ${tx.id}: ${refunds.length} refund(s) of ${atStripe} at Stripe (refunded_amount ${now.refunded_amount}), ` +
            `${made.length} of ${acknowledged} acknowledged and succeeded${told}` +
            (tx.told?.attempts
              ? ` (its attempts: ${tx.told.attempts.slice(0, 3).join(', ')} ... ${tx.told.attempts.slice(-2).join(', ')})`
              : ''),
        ),
      );
    } else if ((now.refunded_amount ?? 0) !== acknowledged)
      findings.push(
        finding(
          'mismatch',
          `transaction ${tx.id}: refunded_amount ${now.refunded_amount}, acknowledged ${acknowledged}`,
        ),
      );
    if (tx.refunds.length) summary.refunded++;
  });
  for (const [rid, pis] of intents)
    if (!known.has(rid))
      findings.push(
        finding(
          'unacknowledged',
          `PaymentIntent(s) ${pis.map((p) => `${p.id} (${p.status})`).join(', ')}: reconciliation id ${rid} of no acknowledged transaction`,
        ),
      );
  return { findings, summary, finalStatus };
}
