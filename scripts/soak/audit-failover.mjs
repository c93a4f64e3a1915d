/*
 * What a failover must not do (docs/operations.md, "High availability"), checked on every attempt the load
 * made from a failover's kill until the next fault: answer 500, 502 or 504 (503 is the answer while no
 * leader is reachable), keep a request waiting more than 30 s, or leave the service failing more than
 * 30 s after the kill. And once the load is over, every instance listens for change notifications again
 * (its LISTEN connection re-established on the new leader).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from './client.mjs';

/** What an instance logged as the error of the request `trace` (its type and message), from its log file. */
function loggedError(cluster, trace) {
  for (const instance of cluster.instances) {
    let text = '';
    try {
      text = readFileSync(join(cluster.dir, `${instance.name}.log`), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n'))
      if (line.includes(trace) && line.includes('"err"'))
        try {
          const err = JSON.parse(line).err;
          if (err?.type && err.type !== 'Error') return `${instance.name} logged ${err.type}: ${err.message}`;
        } catch {
          // not a JSON line
        }
  }
  return `trace ${trace} (not found in the instances' logs)`;
}

/** Longest a request may wait for an answer, and longest the service may fail after a kill. */
export const FAILOVER_LIMIT_MS = 30_000;
const FAILOVERS = new Set(['leader-postgres', 'leader-patroni']);

/** Findings and a summary per failover: { name, failed, statuses, longestMs, recoveredMs }. */
export function auditFailovers({ recorder, faults, cluster }) {
  const findings = [];
  const summary = [];
  faults.forEach((fault, i) => {
    if (!FAILOVERS.has(fault.kind)) return;
    const until = faults[i + 1]?.startMs ?? Infinity;
    // Every attempt answered from the kill (one sent just before it included) until the next fault began.
    const attempts = recorder.attempts.filter((a) => a.end >= fault.startMs && a.end < until);
    const failed = attempts.filter((a) => !a.ok);
    for (const a of failed.filter((x) => /^(500|502|504)\b/.test(x.outcome)))
      findings.push({
        category: 'server error in a failover',
        detail:
          `${a.kind} answered ${a.outcome} ${(a.start - fault.startMs) / 1000} s after ${fault.name}` +
          (a.trace ? `: ${loggedError(cluster, a.trace)}` : ''),
      });
    const longest = attempts.reduce((max, a) => Math.max(max, a.end - a.start), 0);
    if (longest > FAILOVER_LIMIT_MS)
      findings.push({
        category: 'waited too long in a failover',
        detail: `a request waited ${longest} ms for its answer after ${fault.name}`,
      });
    // Recovered: the end of the last failed attempt (0 when none failed), from the kill.
    const recoveredMs = failed.reduce((max, a) => Math.max(max, a.end - fault.startMs), 0);
    if (recoveredMs > FAILOVER_LIMIT_MS)
      findings.push({
        category: 'slow recovery from a failover',
        detail: `requests still failed ${recoveredMs} ms after ${fault.name}`,
      });
    const statuses = {};
    for (const a of failed) statuses[a.outcome] = (statuses[a.outcome] ?? 0) + 1;
    summary.push({ name: fault.name, failed: failed.length, statuses, longestMs: longest, recoveredMs });
  });
  return { findings, summary };
}

/** Every instance's readiness reports its change notifications' connection up (within `timeoutMs`). */
export async function auditListening(cluster, timeoutMs = 15_000) {
  const findings = [];
  const listening = {};
  for (const instance of cluster.instances) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const body = await fetch(`${instance.url}/health/ready`)
        .then((res) => res.json())
        .catch(() => undefined);
      listening[instance.name] = body?.details?.notifications?.listening === true;
      if (listening[instance.name] || Date.now() > deadline) break;
      await sleep(500);
    }
    if (!listening[instance.name])
      findings.push({
        category: 'not listening',
        detail: `${instance.name} does not listen for change notifications after the faults`,
      });
  }
  return { findings, summary: listening };
}
