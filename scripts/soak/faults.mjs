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
  return plan.filter((step) => kinds.includes(step.kind)).sort((a, b) => a.atMs - b.atMs);
}

function describe(step, cluster) {
  if (step.kind === 'kill') return `SIGKILL ${cluster.instances[step.instance].name}`;
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
        else if (step.kind === 'postgres') {
          const began = Date.now();
          await restartPostgres();
          fault.detail = { restartMs: Date.now() - began };
        } else fault.detail = await cluster.pgbouncer.restart();
      } catch (error) {
        fault.error = String(error?.message ?? error);
        log(`  ${fault.name} failed: ${fault.error}`);
        // Whatever it left down is brought back, so that the rest of the run and the audit can go on.
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
