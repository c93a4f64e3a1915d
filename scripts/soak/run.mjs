/*
 * `runSoak({ minutes })`: the cluster and its neighbours (setup.mjs), the load (load.mjs) and the faults
 * (faults.mjs) for `minutes`, then, with the faults stopped and everything up, the auditor
 * (audit-data.mjs, audit-events.mjs), and the numbers (report.mjs). Answers the summary; `clean` is false
 * when the auditor found anything.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { auditPayments, auditTokens } from './audit-data.mjs';
import { auditLog, auditReplays, auditWebhooks } from './audit-events.mjs';
import { auditFailovers, auditListening } from './audit-failover.mjs';
import { Client, Recorder, sleep } from './client.mjs';
import { FAULT_KINDS, HA_FAULT_KINDS, schedule, startFaults } from './faults.mjs';
import { newBook, startLoad } from './load.mjs';
import { summarize } from './report.mjs';
import { ROOT, setUp } from './setup.mjs';

/** Keeps the tenant's latest signed checkpoint and the verifier key (as a tenant would, outside the service). */
async function keepCheckpoint(env, dir) {
  const client = new Client({
    base: env.cluster.url,
    key: env.managementKey,
    recorder: new Recorder(),
    deadlineMs: 60_000,
  });
  const checkpoint = (await client.send('checkpoint', { path: '/logs/checkpoint' })).json;
  const keys = (await client.send('checkpoint keys', { path: '/logs/checkpoint/keys' })).json;
  const file = join(dir, 'kept-checkpoint.txt');
  writeFileSync(file, checkpoint.note);
  return { file, treeSize: checkpoint.tree_size, verifierKey: keys[keys.length - 1]?.verifier_key };
}

/** Every instance running and every one UP in HAProxy (a fault that failed may have left one down). */
async function everythingUp(cluster, log) {
  for (const instance of cluster.instances) {
    const stats = await cluster.stats();
    if (stats.find((s) => s.name === instance.name)?.status === 'UP') continue;
    if (
      !instance.pid ||
      !(await fetch(`${instance.url}/health/live`).then(
        () => true,
        () => false,
      ))
    ) {
      log(`${instance.name} is down: starting it for the audit`);
      await instance.stop();
      await instance.start();
    }
  }
  for (let i = 0; i < 120; i++) {
    const stats = await cluster.stats();
    if (stats.every((s) => s.status === 'UP')) return;
    await sleep(500);
  }
  throw new Error('the instances are not all UP in HAProxy after the load');
}

/**
 * Options: minutes (10), clients (4: concurrent clients of the load), ha (the database under Patroni:
 * `npm run cluster -- --ha`), faults (the kinds: kill, postgres, pgbouncer, all by default; with `ha`,
 * leader-postgres and leader-patroni by default, kill and pgbouncer also possible), log (a line printer: progress every 10 s, each fault), keepLogs (keep the
 * run directories), signal (an AbortSignal: stops everything at once, and rejects). Answers summarize()'s
 * result and `machine`.
 */
export async function runSoak({
  minutes = 10,
  clients = 4,
  ha = false,
  faults: kinds = ha ? HA_FAULT_KINDS : FAULT_KINDS,
  log = () => undefined,
  keepLogs = false,
  signal,
} = {}) {
  const durationMs = Math.round(minutes * 60_000);
  log('starting the cluster, the Stripe fake, the webhook receiver and the echo destination...');
  const env = await setUp({ log, keepLogs, ha });
  // Interrupted: everything is stopped at once (the cluster drops its database); nothing is audited.
  const interrupted = new Promise((_, reject) =>
    signal?.addEventListener('abort', () => {
      log('interrupted: stopping the cluster');
      reject(new Error('interrupted'));
      void env.stop();
    }),
  );
  interrupted.catch(() => undefined);
  if (signal?.aborted) {
    await env.stop();
    throw new Error('interrupted');
  }
  const step = (promise) => Promise.race([promise, interrupted]);
  try {
    const { cluster } = env;
    log(
      `cluster ${cluster.url} (database ${cluster.database}, logs ${cluster.dir}); load for ${minutes} min`,
    );
    const recorder = new Recorder();
    const book = newBook(randomBytes(6).toString('hex'));
    const client = new Client({ base: cluster.url, key: env.clientKey, recorder });
    const load = startLoad(
      { client, book, recorder, connectionId: env.connectionId, proxyKey: env.proxyKey },
      { clients },
    );
    const faults = startFaults(cluster, recorder, schedule(Math.max(1, Math.round(minutes)), kinds), log);
    let kept;
    const keeping = sleep(Math.min(durationMs / 2, 45_000)).then(
      async () => (kept = await keepCheckpoint(env, env.dir)),
    );
    let reported = 0;
    while (recorder.now() < durationMs) {
      await step(sleep(Math.min(10_000, durationMs - recorder.now())));
      const window = recorder.attempts.slice(reported);
      reported = recorder.attempts.length;
      log(
        `${(recorder.now() / 1000).toFixed(0)} s: ${window.filter((a) => a.ok).length} 2xx, ` +
          `${window.filter((a) => !a.ok).length} failed; ${book.tokens.size} tokens, ${book.transactions.size} payments`,
      );
    }
    log('stopping the faults and the load (operations under way finish, with their retries)...');
    const faultList = await step(faults.stop());
    await step(load.stop());
    await keeping.catch((error) => log(`could not keep a checkpoint: ${error.message}`));
    log(`load done at ${(recorder.now() / 1000).toFixed(0)} s; auditing...`);
    await step(everythingUp(cluster, log));
    // Every node back: the leader and its synchronous standby, whatever the last fault left.
    if (cluster.ha) await step(cluster.ha.healthy(180_000));

    const auditRecorder = new Recorder();
    const auditor = new Client({
      base: cluster.url,
      key: env.auditorKey,
      recorder: auditRecorder,
      deadlineMs: 120_000,
    });
    const replayer = new Client({
      base: cluster.url,
      key: env.clientKey,
      recorder: auditRecorder,
      deadlineMs: 120_000,
    });
    const common = { book, recorder, directUrl: cluster.directUrl, tenantId: env.tenantId };
    const tokens = await step(auditTokens({ ...common, auditor }));
    log(`tokens audited: ${JSON.stringify(tokens.summary)}`);
    const payments = await step(auditPayments({ reader: auditor, book, stripe: env.stripe }));
    log(`payments audited: ${JSON.stringify(payments.summary)}`);
    const webhooks = await step(
      auditWebhooks({
        ...common,
        receiver: env.receiver,
        webhookId: env.webhookId,
        finalStatus: payments.finalStatus,
      }),
    );
    log(`webhooks audited: ${JSON.stringify(webhooks.summary)}`);
    const replays = await step(auditReplays({ client: replayer, recorder }));
    log(`replays audited: ${JSON.stringify(replays.summary)}`);
    const logs = await step(
      auditLog({
        root: ROOT,
        cluster,
        tenantId: env.tenantId,
        checkpointFile: kept?.file,
        verifierKey: kept?.verifierKey,
        managementKey: env.managementKey,
      }),
    );
    log(`audit log verified: ${JSON.stringify(logs.summary)}`);
    const parts = { tokens, payments, webhooks, replays, logs };
    if (cluster.ha) {
      parts.failovers = auditFailovers({ recorder, faults: faultList, cluster });
      parts.listening = await step(auditListening(cluster));
      log(`failovers audited: ${JSON.stringify(parts.failovers.summary)}`);
    }
    const audit = {
      findings: Object.values(parts).flatMap((p) => p.findings),
      summary: Object.fromEntries(Object.entries(parts).map(([name, p]) => [name, p.summary])),
    };
    audit.summary.logs.keptCheckpoint = kept ? { treeSize: kept.treeSize } : null;
    const stats = await cluster.stats();
    audit.summary.haproxy = stats.map((s) => ({
      name: s.name,
      retries: s.retries,
      redispatches: s.redispatches,
      connectionErrors: s.connectionErrors,
      responseErrors: s.responseErrors,
      http5xx: s.http5xx,
    }));
    const result = summarize({ minutes, durationMs, recorder, book, faults: faultList, audit });
    result.machine = { cores: availableParallelism() };
    return result;
  } finally {
    log('stopping the cluster...');
    await env.stop();
  }
}
