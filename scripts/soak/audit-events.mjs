/*
 * The auditor's checks of what the service promises around the data: webhook events (each one at the
 * receiver at least once, signed, and in order per entity: docs/webhooks.md), idempotent replays (the same
 * key answers the first outcome, byte for byte: docs/idempotency.md) and the audit log (`vault logs
 * verify` against the cluster's database, and the example verifier through the API: docs/audit-verification.md).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { sleep } from './client.mjs';
import { finding, parallel } from './audit-data.mjs';

const run = promisify(execFile);

async function withDb(url, work) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/**
 * Waits (up to `waitMs`) until the webhook has no pending delivery, then compares the deliveries the
 * service recorded (in `seq` order, its order per entity) with what the receiver verified: every event
 * received, each entity's events first received in their order, every acknowledged token and transaction
 * reported, and each transaction's last event showing the state it ended in.
 */
export async function auditWebhooks({
  receiver,
  book,
  directUrl,
  tenantId,
  webhookId,
  finalStatus,
  waitMs = 150_000,
}) {
  const findings = [];
  const began = Date.now();
  const rows = await withDb(directUrl, async (db) => {
    for (;;) {
      const {
        rows: [state],
      } = await db.query(
        `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending FROM webhook_deliveries
          WHERE tenant_id = $1 AND webhook_id = $2`,
        [tenantId, webhookId],
      );
      if (state.pending === 0 || Date.now() - began > waitMs) break;
      await sleep(1_000);
    }
    return (
      await db.query(
        `SELECT event_id, event_type, entity_id, seq::text AS seq, status, attempts FROM webhook_deliveries
          WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY webhook_deliveries.seq`,
        [tenantId, webhookId],
      )
    ).rows;
  });
  const drainedMs = Date.now() - began;
  const first = new Map();
  const arrivals = new Map();
  receiver.deliveries.forEach((d, i) => {
    if (!first.has(d.id)) first.set(d.id, { index: i, ...d });
    arrivals.set(d.id, (arrivals.get(d.id) ?? 0) + 1);
  });
  const byEntity = new Map();
  for (const row of rows) {
    if (!first.has(row.event_id))
      findings.push(
        finding(
          'lost',
          `webhook event ${row.event_id} (${row.event_type} of ${row.entity_id}) never reached the receiver: ` +
            `${row.status} after ${row.attempts} attempt(s)`,
        ),
      );
    byEntity.set(row.entity_id, [...(byEntity.get(row.entity_id) ?? []), row]);
  }
  let outOfOrder = 0;
  for (const [entity, events] of byEntity) {
    const seen = events.filter((e) => first.has(e.event_id));
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [first.get(seen[i - 1].event_id), first.get(seen[i].event_id)];
      if (b.index < a.index) {
        outOfOrder++;
        findings.push(
          finding(
            'out of order',
            `${entity}: ${seen[i].event_type} ${seen[i].event_id} (seq ${seen[i].seq}${b.status ? `, ${b.status}` : ''}) arrived before ` +
              `${seen[i - 1].event_type} ${seen[i - 1].event_id} (seq ${seen[i - 1].seq}${a.status ? `, ${a.status}` : ''})`,
          ),
        );
      }
    }
  }
  // From the client's side: what it was told happened was reported.
  const reported = (entity, type) =>
    (byEntity.get(entity) ?? []).some((e) => e.event_type === type && first.has(e.event_id));
  for (const id of book.tokens.keys())
    if (!reported(id, 'token:created'))
      findings.push(finding('lost', `token ${id}: no token:created event received`));
  for (const tx of book.transactions.values()) {
    if (!reported(tx.id, 'transaction:created'))
      findings.push(finding('lost', `transaction ${tx.id}: no transaction:created event received`));
    const events = (byEntity.get(tx.id) ?? []).filter((e) => first.has(e.event_id));
    const last = events.length ? first.get(events[events.length - 1].event_id) : undefined;
    const status = finalStatus.get(tx.id);
    if (last && status && last.status !== status)
      findings.push(
        finding('lost', `transaction ${tx.id}: its last event says ${last.status}, it is ${status}`),
      );
  }
  if (receiver.rejected)
    findings.push(
      finding('unverifiable', `${receiver.rejected} delivery(ies) failed signature verification`),
    );
  const duplicates = [...arrivals.values()].filter((n) => n > 1).length;
  return {
    findings,
    summary: {
      events: rows.length,
      received: receiver.deliveries.length,
      distinct: first.size,
      duplicates,
      entities: byEntity.size,
      outOfOrder,
      drainedMs,
      rejected: receiver.rejected,
    },
  };
}

/**
 * Replays acknowledged idempotent requests with their keys: each must answer the stored first outcome
 * (same status, same bytes, `BT-IDEMPOTENCY-REPLAYED: true`). Every request that took more than one
 * attempt is replayed, and a sample of the others up to `limit` in all.
 */
export async function auditReplays({ client, recorder, limit = 3_000 }) {
  const findings = [];
  const retried = recorder.idempotent.filter((r) => r.attempts > 1);
  const others = recorder.idempotent.filter((r) => r.attempts === 1);
  for (let i = others.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [others[i], others[j]] = [others[j], others[i]];
  }
  const chosen = [...retried, ...others.slice(0, Math.max(0, limit - retried.length))];
  let matched = 0;
  await parallel(chosen, 6, async (r) => {
    const res = await client.send('audit replay', {
      method: r.method,
      path: r.path,
      body: r.body,
      key: r.key,
      record: false,
    });
    if (res.status === r.status && res.text === r.text && res.replayed) matched++;
    else
      findings.push(
        finding(
          'replay mismatch',
          `${r.method} ${r.path} key ${r.key}: first ${r.status} (${r.text.length} bytes, after ${r.attempts} attempt(s)), ` +
            `replay ${res.status} (${res.text.length} bytes, replayed ${res.replayed})`,
        ),
      );
  });
  return {
    findings,
    summary: {
      acknowledged: recorder.idempotent.length,
      retried: retried.length,
      replayed: chosen.length,
      matched,
    },
  };
}

/**
 * The audit log: `vault logs verify` on the cluster's database (the tenant's tree recomputed from its rows,
 * every checkpoint's signature, and the checkpoint kept during the load still held), then the example
 * verifier through the balancer (the latest checkpoint's signature, its consistency with the kept one, the
 * newest rows' inclusion proofs).
 */
export async function auditLog({ root, cluster, tenantId, checkpointFile, verifierKey, managementKey }) {
  const findings = [];
  const summary = {};
  const env = {
    ...process.env,
    DATABASE_URL: cluster.directUrl,
    ENCRYPTION_KEYS: cluster.encryptionKeys,
    LOG_LEVEL: 'warn',
  };
  const args = [join(root, 'bin', 'vault.js'), 'logs', 'verify', '--tenant', tenantId];
  if (checkpointFile) args.push('--checkpoint', checkpointFile);
  try {
    const { stdout } = await run(process.execPath, args, {
      env,
      cwd: root,
      timeout: 300_000,
      maxBuffer: 64 << 20,
    });
    const report = JSON.parse(stdout.trim().split('\n').pop());
    summary.cli = {
      rows: report.rows_checked,
      checkpoints: report.checkpoints_checked,
      problems: report.problems.length,
    };
    for (const problem of report.problems)
      findings.push(finding('unverifiable', `logs verify: ${JSON.stringify(problem)}`));
  } catch (error) {
    const out = `${error.stdout ?? ''}${error.stderr ?? ''}`.trim().slice(-1_000);
    findings.push(
      finding('unverifiable', `vault logs verify failed (exit ${error.code}): ${out || error.message}`),
    );
  }
  if (checkpointFile && verifierKey) {
    const example = [
      join(root, 'examples', 'verify-audit', 'verify-audit.js'),
      ...[
        '--url',
        cluster.url,
        '--key',
        managementKey,
        '--checkpoint',
        checkpointFile,
        '--verifier-key',
        verifierKey,
      ],
      ...['--limit', '200'],
    ];
    try {
      const { stdout } = await run(process.execPath, example, { cwd: root, timeout: 120_000 });
      summary.api = { checks: stdout.trim().split('\n').length };
    } catch (error) {
      const out = `${error.stdout ?? ''}${error.stderr ?? ''}`.trim().slice(-1_000);
      findings.push(
        finding('unverifiable', `verify-audit.js failed (exit ${error.code}): ${out || error.message}`),
      );
    }
  } else findings.push(finding('unverifiable', 'no checkpoint was kept during the load'));
  return { findings, summary };
}
