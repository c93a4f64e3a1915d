/*
 * The soak's numbers, from the client's record of every attempt: the load per 10-second window (answered
 * 2xx / failed), the failures by phase (steady, or a fault's: from its start until the next fault, at
 * most 45 s; a failure belongs to the phase in which its operation first failed), each fault's recovery
 * (its first 2xx, its last failure, its longest operation, how long its action took), and the auditor's
 * findings. `summarize` makes the JSON; `format` the text.
 */

const WINDOW_MS = 10_000;
/** A fault's phase lasts until the next fault, at most this long. */
const PHASE_MS = 45_000;

const s = (ms) => `${(ms / 1000).toFixed(1)} s`;

function countBy(list, key) {
  const out = {};
  for (const item of list) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}

const errorsLine = (errors) =>
  Object.entries(errors)
    .sort((a, b) => b[1] - a[1])
    .map(([label, n]) => `${label} ×${n}`)
    .join(', ');

/** Attempts per 10-second window of the load, by when they ended. */
function windows(attempts, durationMs) {
  const out = [];
  for (let from = 0; from < durationMs; from += WINDOW_MS) {
    const inside = attempts.filter((a) => a.end >= from && a.end < from + WINDOW_MS);
    out.push({
      fromS: from / 1000,
      ok: inside.filter((a) => a.ok).length,
      failed: inside.filter((a) => !a.ok).length,
    });
  }
  return out;
}

/** The faults' phases: each from its start until the next fault, at most PHASE_MS. */
function spansOf(faults, durationMs) {
  const spans = faults.map((f, i) => ({
    name: f.name,
    from: f.startMs,
    to: Math.min(
      f.startMs + PHASE_MS,
      faults[i + 1]?.startMs ?? Infinity,
      Math.max(durationMs, f.startMs + 1),
    ),
  }));
  return { spans, phaseOf: (t) => spans.find((p) => t >= p.from && t < p.to)?.name ?? 'steady' };
}

/**
 * What was answered and what failed in each phase: a 2xx counts when it was answered, a failure when its
 * operation first failed (the retries of a request cut by a fault belong to that fault).
 */
function phases(attempts, faults, durationMs) {
  const { spans, phaseOf } = spansOf(faults, durationMs);
  const out = { steady: { ok: 0, failed: 0, errors: {} } };
  for (const p of spans) out[p.name] ??= { ok: 0, failed: 0, errors: {} };
  for (const a of attempts) {
    const phase = out[phaseOf(a.ok ? a.end : a.since)];
    if (a.ok) phase.ok++;
    else {
      phase.failed++;
      const label = `${a.kind} ${a.outcome}`;
      phase.errors[label] = (phase.errors[label] ?? 0) + 1;
    }
  }
  return out;
}

/**
 * For each fault: the first 2xx answered after it began (how soon the service answered again), the first
 * 2xx of a request sent after its action was done, the failures it caused and when the last one ended,
 * and its longest operation (from the first failed attempt to the answer).
 */
function recoveries(attempts, retried, faults, durationMs) {
  const { phaseOf } = spansOf(faults, durationMs);
  return faults.map((f) => {
    const done = f.doneMs ?? f.startMs;
    const firstOk = attempts
      .filter((a) => a.ok && a.end >= f.startMs)
      .reduce((min, a) => Math.min(min, a.end), Infinity);
    const afterDone = attempts
      .filter((a) => a.ok && a.start >= done)
      .reduce((min, a) => Math.min(min, a.end), Infinity);
    const failed = attempts.filter((a) => !a.ok && phaseOf(a.since) === f.name);
    const lastFailure = failed.reduce((max, a) => Math.max(max, a.end), -Infinity);
    // The probe's view: its 2xx after its last failure in the phase (0 ms when it never failed).
    const probes = attempts.filter(
      (a) => a.kind === 'probe' && a.start >= f.startMs && phaseOf(a.start) === f.name,
    );
    const lastProbeFailure = probes
      .filter((a) => !a.ok)
      .reduce((max, a) => Math.max(max, a.start), -Infinity);
    const firstProbeFailure = probes.find((a) => !a.ok);
    const probeBack = probes.find((a) => a.ok && a.start > lastProbeFailure);
    const longest = retried
      .filter((r) => r.since !== undefined && phaseOf(r.since) === f.name)
      .sort((x, y) => y.end - y.since - (x.end - x.since))[0];
    return {
      name: f.name,
      atS: Number((f.startMs / 1000).toFixed(1)),
      actionMs: done - f.startMs,
      detail: f.detail,
      error: f.error,
      firstOkMs: Number.isFinite(firstOk) ? firstOk - f.startMs : null,
      firstOkAfterActionMs: Number.isFinite(afterDone) ? afterDone - done : null,
      probe: {
        failed: probes.filter((a) => !a.ok).length,
        answeredAgainMs: firstProbeFailure ? (probeBack ? probeBack.end - f.startMs : null) : 0,
      },
      failed: failed.length,
      failuresLastedMs: failed.length ? lastFailure - f.startMs : 0,
      errors: countBy(failed, (a) => `${a.kind} ${a.outcome}`),
      longest: longest && {
        kind: longest.kind,
        ms: longest.end - longest.since,
        attempts: longest.attempts.length,
        outcome: longest.outcome,
        outcomes: countBy(longest.attempts, (x) => x.replace(/^[\d.]+ s /, '')),
      },
    };
  });
}

/** The whole result: { minutes, durationMs, totals, operations, windows, phases, faults, audit, findings, clean }. */
export function summarize({ minutes, durationMs, recorder, book, faults, audit }) {
  const attempts = recorder.attempts.filter((a) => a.start < durationMs);
  const findings = [
    ...recorder.inconsistencies.map((x) => ({
      category: 'inconsistent answer',
      detail: `${x.kind} at ${s(x.at)}: ${x.detail}`,
    })),
    ...recorder.abandoned.map((x) => ({
      category: x.refused ? 'refused' : 'unanswered',
      detail:
        `${x.kind} ${x.path} at ${s(x.at)}: ${x.outcome}${x.refused ? ` ${x.detail}` : ''}; ` +
        `${x.history.length} attempts: ${errorsLine(countBy(x.history, (h) => h.replace(/^[\d.]+ s /, '')))}`,
    })),
    ...audit.findings,
  ];
  return {
    minutes,
    durationMs,
    totals: {
      attempts: attempts.length,
      ok: attempts.filter((a) => a.ok).length,
      failed: attempts.filter((a) => !a.ok).length,
      perSecond: Number((attempts.filter((a) => a.ok).length / (durationMs / 1000)).toFixed(1)),
      tokens: book.tokens.size,
      transactions: book.transactions.size,
      failures: countBy(
        attempts.filter((a) => !a.ok),
        (a) => a.outcome,
      ),
    },
    operations: book.operations,
    windows: windows(attempts, durationMs),
    phases: phases(attempts, faults, durationMs),
    faults: recoveries(recorder.attempts, recorder.retried, faults, durationMs),
    audit: audit.summary,
    retried: recorder.retried,
    notes: book.notes,
    findings,
    clean: findings.length === 0,
  };
}

/** The result as text, for a terminal and for docs/operations.md. */
export function format(r) {
  const lines = [];
  const t = r.totals;
  lines.push(
    `soak: ${r.minutes} min under faults, ${t.attempts} requests (${t.perSecond} 2xx/s), ${t.ok} 2xx, ${t.failed} failed; ` +
      `${t.tokens} tokens and ${t.transactions} payments acknowledged`,
  );
  lines.push('operations (done / failed / retried / answered by a replay):');
  for (const [name, c] of Object.entries(r.operations))
    lines.push(`  ${name.padEnd(12)} ${c.done} / ${c.failed} / ${c.retried} / ${c.replayed}`);
  lines.push('load per 10 s (2xx / failed):');
  for (let i = 0; i < r.windows.length; i += 6)
    lines.push(
      `  ${r.windows
        .slice(i, i + 6)
        .map((w) => `${String(w.fromS).padStart(3)} s ${w.ok}/${w.failed}`)
        .join('  ')}`,
    );
  lines.push('failed requests by phase:');
  for (const [name, p] of Object.entries(r.phases))
    lines.push(`  ${name}: ${p.ok} 2xx, ${p.failed} failed${p.failed ? `: ${errorsLine(p.errors)}` : ''}`);
  lines.push('faults:');
  for (const f of r.faults) {
    const detail = f.detail
      ? Object.entries(f.detail)
          .filter(([k]) => k !== 'pid')
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')
      : '';
    lines.push(
      `  ${f.name}${f.error ? ` (FAILED: ${f.error})` : ''}: action ${f.actionMs} ms (${detail}); ` +
        `first 2xx after ${f.firstOkMs ?? '-'} ms (after the action: ${f.firstOkAfterActionMs ?? '-'} ms); ` +
        `${f.failed} failed, the last ${f.failuresLastedMs} ms after the fault${f.failed ? `: ${errorsLine(f.errors)}` : ''}`,
    );
    lines.push(
      `    probe (a fresh read every 200 ms): ${f.probe.failed} failed` +
        (f.probe.failed ? `, answered again ${f.probe.answeredAgainMs ?? '-'} ms after the fault` : ''),
    );
    if (f.longest)
      lines.push(
        `    longest operation: ${f.longest.kind}, answered ${f.longest.outcome} ${f.longest.ms} ms after its first failure ` +
          `(${f.longest.attempts} attempts: ${errorsLine(f.longest.outcomes)})`,
      );
  }
  lines.push('auditor:');
  for (const [part, summary] of Object.entries(r.audit)) lines.push(`  ${part}: ${JSON.stringify(summary)}`);
  if (r.notes.length) {
    lines.push(`notes (no finding by themselves): ${r.notes.length}`);
    for (const note of r.notes.slice(0, 20)) lines.push(`  ${note}`);
  }
  if (r.clean) lines.push('findings: none');
  else {
    lines.push(`findings: ${r.findings.length}`);
    const shown = r.findings.slice(0, 50);
    for (const f of shown) lines.push(`  [${f.category}] ${f.detail}`);
    if (r.findings.length > shown.length)
      lines.push(`  ... and ${r.findings.length - shown.length} more (see the JSON report)`);
  }
  return lines.join('\n');
}
