/*
 * The soak's faults, on a schedule over the run: every minute one instance is killed (SIGKILL, the two in
 * turn) and started again; once, PostgreSQL is restarted (`pg_ctlcluster ... restart`, as
 * test/faults/database.faults-spec.ts does); once, PgBouncer is restarted (its connections cut). Each
 * fault is recorded with when it began and when its action was done (ms since the load began).
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { sleep } from './client.mjs';

const run = promisify(execFile);

export const FAULT_KINDS = ['kill', 'postgres', 'pgbouncer'];
/** With `--ha`: the leader's PostgreSQL killed (kill -9), the leader's Patroni killed (kill -9). */
export const HA_FAULT_KINDS = ['leader-postgres', 'leader-patroni'];

/**
 * The plan for a run of `minutes`: a kill at 10 s into every minute (i1, i2, i1...), PostgreSQL at 40 s
 * into minute ⌊N/3⌋, PgBouncer at 40 s into minute ⌊2N/3⌋ (50 s when that is the same minute); only the
 * `kinds` asked for.
 */
export function schedule(minutes, kinds = FAULT_KINDS) {
  const plan = [];
  for (let m = 0; m < minutes; m++) plan.push({ atMs: m * 60_000 + 10_000, kind: 'kill', instance: m % 2 });
  const pgMinute = Math.floor(minutes / 3);
  const bouncerMinute = Math.floor((2 * minutes) / 3);
  plan.push({ atMs: pgMinute * 60_000 + 40_000, kind: 'postgres' });
  plan.push({
    atMs: bouncerMinute * 60_000 + (bouncerMinute === pgMinute ? 50_000 : 40_000),
    kind: 'pgbouncer',
  });
  // A failover at 25 s into every minute: the leader's PostgreSQL, then the leader's Patroni, in turn.
  for (let m = 0; m < minutes; m++)
    plan.push({ atMs: m * 60_000 + 25_000, kind: m % 2 === 0 ? 'leader-postgres' : 'leader-patroni' });
  return plan.filter((step) => kinds.includes(step.kind)).sort((a, b) => a.atMs - b.atMs);
}

function describe(step, cluster) {
  if (step.kind === 'kill') return `SIGKILL ${cluster.instances[step.instance].name}`;
  if (step.kind === 'leader-postgres') return "kill -9 the leader's PostgreSQL";
  if (step.kind === 'leader-patroni') return "kill -9 the leader's Patroni";
  if (step.kind === 'postgres') return 'PostgreSQL restart';
  return 'PgBouncer restart';
}

async function restartPostgres() {
  const version = readdirSync('/etc/postgresql')[0];
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart'], { timeout: 120_000 });
}

/** Kills the instance (SIGKILL: no drain, nothing released), waits for its exit, starts it again. */
async function killAndRestart(instance) {
  const pid = instance.pid;
  process.kill(pid, 'SIGKILL');
  await instance.stop();
  const killedMs = Date.now();
  const started = await instance.start();
  return { pid, ...started, restartMs: Date.now() - killedMs };
}

/**
 * A failover: `kill -9` of the leader's PostgreSQL (its Patroni then brings it back as a standby of the
 * new leader) or of the leader's Patroni (its PostgreSQL runs on, unmanaged: the standby takes over when
 * the leader key expires, and the killed Patroni, started again, demotes and rewinds it). Answers when
 * the new leader answers through HAProxy (`promotedMs`, since the kill) and the old one has rejoined as
 * its synchronous standby (`rejoinedMs`).
 */
async function failover(ha, what) {
  const old = await ha.leader();
  if (!old) throw new Error('no leader to kill');
  const killedAt = Date.now();
  const pid = what === 'postgres' ? old.killPostgres() : await old.killPatroni();
  let leader;
  for (;;) {
    leader = await ha.leader();
    if (leader && leader !== old) break;
    if (Date.now() - killedAt > 120_000) throw new Error('no new leader 120 s after the kill');
    await sleep(100);
  }
  const promotedMs = Date.now() - killedAt;
  if (what === 'patroni') old.start();
  await ha.healthy(180_000);
  return { killed: old.name, pid, leader: leader.name, promotedMs, rejoinedMs: Date.now() - killedAt };
}

/**
 * Runs the plan against the cluster while the load runs; `recorder.now()` is the load's clock. Answers
 * { done: Promise<faults[]>, stop() } where each fault is { name, kind, plannedMs, startMs, doneMs, detail,
 * error? }. `stop()` skips the faults not yet begun (the one under way finishes).
 */
export function startFaults(cluster, recorder, plan, log = () => undefined) {
  const faults = [];
  let stopped = false;
  let wake;
  const done = (async () => {
    for (const step of plan) {
      while (!stopped && recorder.now() < step.atMs)
        await new Promise((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(1_000, step.atMs - recorder.now()));
        });
      if (stopped) break;
      const fault = {
        name: `${describe(step, cluster)} at ${step.atMs / 1000} s`,
        kind: step.kind,
        plannedMs: step.atMs,
        startMs: recorder.now(),
      };
      faults.push(fault);
      log(`${(fault.startMs / 1000).toFixed(1)} s: ${fault.name}`);
      try {
        if (step.kind === 'kill') fault.detail = await killAndRestart(cluster.instances[step.instance]);
        else if (step.kind === 'leader-postgres') fault.detail = await failover(cluster.ha, 'postgres');
        else if (step.kind === 'leader-patroni') fault.detail = await failover(cluster.ha, 'patroni');
        else if (step.kind === 'postgres') {
          const began = Date.now();
          await restartPostgres();
          fault.detail = { restartMs: Date.now() - began };
        } else fault.detail = await cluster.pgbouncer.restart();
      } catch (error) {
        fault.error = String(error?.message ?? error);
        log(`  ${fault.name} failed: ${fault.error}`);
        // Whatever it left down is brought back, so that the rest of the run and the audit can go on.
        for (const node of cluster.ha?.nodes ?? []) if (!node.patroniPid) node.start();
        await sleep(1_000);
      }
      fault.doneMs = recorder.now();
      log(`${(fault.doneMs / 1000).toFixed(1)} s: ${fault.name} done`);
    }
    return faults;
  })();
  return {
    done,
    stop: async () => {
      stopped = true;
      wake?.();
      return done;
    },
  };
}
