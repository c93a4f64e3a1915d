#!/usr/bin/env node
/*
 * `npm run soak -- --minutes N`: the service under a mixed load and faults for N minutes (10 by default),
 * then an audit of everything the client was told (docs/operations.md, "Soak under faults"). The cluster
 * of `npm run cluster` (PgBouncer, two instances, HAProxy), a Stripe fake, a webhook receiver and a proxy
 * destination, all on 127.0.0.1; every minute an instance is killed (SIGKILL) and started again, and once
 * each PostgreSQL and PgBouncer are restarted. Prints the load per 10 s, the failures by phase, each
 * fault's recovery and the auditor's findings; exits 1 when the auditor found anything (lost, charged
 * twice, out of order, unverifiable...), 2 when the soak itself could not run.
 *
 * Options: --minutes N, --clients N (4), --ha (the database under Patroni, `npm run cluster -- --ha`:
 * a failover every minute, the leader's PostgreSQL then its Patroni killed in turn), --faults LIST (the
 * kinds to inject, of kill,postgres,pgbouncer, all by default; with --ha of leader-postgres,
 * leader-patroni, kill, pgbouncer), --json FILE (the whole result as JSON), --keep-logs (keep the cluster's run directory:
 * every process's output). Needs PostgreSQL (DATABASE_URL, default the local server), pgbouncer and
 * haproxy; restarting PostgreSQL needs pg_ctlcluster (Debian's postgresql-common). Ctrl-C stops the
 * cluster and drops its database.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { format } from './soak/report.mjs';
import { FAULT_KINDS, HA_FAULT_KINDS } from './soak/faults.mjs';
import { runSoak } from './soak/run.mjs';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    clients: { type: 'string', default: '4' },
    faults: { type: 'string' },
    ha: { type: 'boolean', default: false },
    json: { type: 'string' },
    'keep-logs': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    'Usage: npm run soak -- [--minutes N] [--clients N] [--ha] [--faults kill,postgres,pgbouncer] [--json FILE] [--keep-logs]\n' +
      '--ha: the database under Patroni (npm run cluster -- --ha); faults leader-postgres,leader-patroni by default.\n',
  );
  process.exit(0);
}
const minutes = Number(values.minutes);
const clients = Number(values.clients);
if (!(minutes > 0 && minutes <= 24 * 60) || !(Number.isInteger(clients) && clients > 0 && clients <= 64)) {
  process.stderr.write('--minutes must be a number of minutes above 0, --clients an integer from 1 to 64\n');
  process.exit(2);
}
const ha = values.ha;
// Restarting the one PostgreSQL (pg_ctlcluster) means nothing when Patroni runs the database.
const kinds = ha ? [...HA_FAULT_KINDS, 'kill', 'pgbouncer'] : FAULT_KINDS;
const faults = (values.faults ?? (ha ? HA_FAULT_KINDS : FAULT_KINDS).join(',')).split(',').filter(Boolean);
if (faults.some((kind) => !kinds.includes(kind))) {
  process.stderr.write(`--faults takes a comma-separated list of ${kinds.join(', ')}\n`);
  process.exit(2);
}
// Ctrl-C or SIGTERM: the cluster is stopped and its database dropped; a second one exits at once.
const interrupt = new AbortController();
const onSignal = () => (interrupt.signal.aborted ? process.exit(130) : interrupt.abort());
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
const started = Date.now();
const log = (line) =>
  process.stdout.write(`[soak ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
try {
  const result = await runSoak({
    minutes,
    clients,
    ha,
    faults,
    log,
    keepLogs: values['keep-logs'],
    signal: interrupt.signal,
  });
  result.wallMs = Date.now() - started;
  if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`\n${format(result)}\n`);
  process.exitCode = result.clean ? 0 : 1;
} catch (error) {
  if (interrupt.signal.aborted) process.exit(130);
  process.stderr.write(`the soak could not run: ${error?.stack ?? error}\n`);
  process.exitCode = 2;
}
