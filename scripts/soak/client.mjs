/*
 * The soak's client: a careful one. Every POST carries `BT-IDEMPOTENCY-KEY` (docs/idempotency.md) and is
 * sent again with the same key after a connection error, a 5xx, a 409 (still in flight: `Retry-After`) or
 * a 429, until it is answered 2xx or the operation's deadline passes. Every attempt is recorded (when,
 * how long, its outcome), and every acknowledged idempotent request is kept for the auditor's replays.
 */
import { randomUUID } from 'node:crypto';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** An operation that ended without a 2xx: a 4xx that retrying cannot change, or the deadline ran out. */
export class OperationFailed extends Error {
  constructor(kind, outcome, detail, history = []) {
    super(`${kind}: ${outcome}${detail ? ` (${detail})` : ''}`);
    this.kind = kind;
    this.outcome = outcome;
    this.detail = detail;
    /** Each attempt: `<seconds> s <outcome>`. */
    this.history = history;
  }
}

/** What the soak saw: every attempt, and everything acknowledged. Times are ms since `t0`. */
export class Recorder {
  constructor() {
    this.t0 = Date.now();
    /** { kind, start, end, outcome: '201' | '503' | 'ECONNRESET' ..., ok } */
    this.attempts = [];
    /** Acknowledged idempotent requests: { kind, key, method, path, body, status, text, attempts }. */
    this.idempotent = [];
    /** Operations that ended without a 2xx: { kind, key, path, outcome, refused (a 4xx), detail, at, history }. */
    this.abandoned = [];
    /** Answers that contradict what the client was told before (a 2xx with wrong data): { kind, detail, at }. */
    this.inconsistencies = [];
    /** Every operation that took more than one attempt: { kind, key, path, attempts: ['12.3 s 409', ...] }. */
    this.retried = [];
  }

  now() {
    return Date.now() - this.t0;
  }

  inconsistent(kind, detail) {
    this.inconsistencies.push({ kind, detail, at: this.now() });
  }
}

/** The error code of a failed fetch (undici puts it on `cause`), or its name. */
function errorCode(error) {
  const cause = error?.cause;
  return cause?.code ?? cause?.name ?? error?.name ?? String(error);
}

/**
 * What an answer that is not a 2xx is called in the record: its status, `409 in flight` for the conflict
 * of an idempotency key whose first request still runs (it has `Retry-After`), else the status and the
 * problem's `code`.
 */
/** The `trace_id` of a problem document, if the answer is one. */
function traceOf(text) {
  try {
    return JSON.parse(text)?.trace_id;
  } catch {
    return undefined;
  }
}

function label(status, headers, text) {
  if (status === 409 && headers.get('retry-after')) return '409 in flight';
  let code;
  try {
    code = JSON.parse(text)?.code;
  } catch {
    // not a problem document
  }
  return code && status < 500 ? `${status} ${code}` : String(status);
}

/** Sent again with the same key: a 5xx, a 429, and a 409 whose key is still held by its first request. */
const retryable = (status, headers) =>
  status >= 500 || status === 429 || (status === 409 && Boolean(headers.get('retry-after')));

export class Client {
  /**
   * base: the balancer's URL; key: the API key; recorder; deadlineMs: how long one operation is retried;
   * timeoutMs: how long one attempt waits for its whole answer.
   */
  constructor({ base, key, recorder, deadlineMs = 180_000, timeoutMs = 40_000 }) {
    this.base = base;
    this.key = key;
    this.recorder = recorder;
    this.deadlineMs = deadlineMs;
    this.timeoutMs = timeoutMs;
  }

  /**
   * Sends one request until it is answered 2xx; answers { status, text, json, headers, attempts, history,
   * key, replayed }. `idempotent` (default for POST, PUT, PATCH): the same `BT-IDEMPOTENCY-KEY` on every
   * attempt. `record`: keep it for the replay audit (default: when idempotent). Each attempt is recorded
   * with `since`, when the operation's first failed attempt ended (its own end when none failed): a failure
   * is counted in the phase in which its operation first failed.
   */
  async send(kind, { method = 'GET', path, body, headers = {}, idempotent, record, key } = {}) {
    const withKey = idempotent ?? ['POST', 'PUT', 'PATCH'].includes(method);
    const idempotencyKey = withKey ? (key ?? randomUUID()) : undefined;
    const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const deadline = Date.now() + this.deadlineMs;
    const history = [];
    let backoff = 100;
    let since;
    const attempt = (start, outcome, ok, trace) => {
      const end = this.recorder.now();
      since ??= ok ? undefined : end;
      this.recorder.attempts.push({
        kind,
        start,
        end,
        outcome,
        ok,
        since: since ?? end,
        ...(trace ? { trace } : {}),
      });
      history.push(`${(start / 1000).toFixed(1)} s ${outcome}`);
      return end;
    };
    /** The operation ended (answered, refused, given up): kept when it took more than one attempt. */
    const ended = (end, outcome) => {
      if (history.length > 1)
        this.recorder.retried.push({
          kind,
          key: idempotencyKey,
          method,
          path,
          since,
          end,
          outcome,
          attempts: history,
        });
    };
    for (;;) {
      const start = this.recorder.now();
      let outcome;
      let retryAfterMs;
      try {
        const res = await fetch(`${this.base}${path}`, {
          method,
          headers: {
            'BT-API-KEY': this.key,
            ...(text !== undefined ? { 'Content-Type': 'application/json' } : {}),
            ...(idempotencyKey ? { 'BT-IDEMPOTENCY-KEY': idempotencyKey } : {}),
            ...headers,
          },
          body: text,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        const answer = await res.text();
        const ok = res.status >= 200 && res.status < 300;
        outcome = ok ? String(res.status) : label(res.status, res.headers, answer);
        // A 500's trace id: the auditor finds what the instance logged for it.
        const end = attempt(start, outcome, ok, res.status === 500 ? traceOf(answer) : undefined);
        if (ok) {
          ended(end, outcome);
          if (idempotencyKey && (record ?? true))
            this.recorder.idempotent.push({
              kind,
              key: idempotencyKey,
              method,
              path,
              body: text,
              status: res.status,
              text: answer,
              attempts: history.length,
            });
          return {
            status: res.status,
            text: answer,
            json: answer ? JSON.parse(answer) : undefined,
            headers: res.headers,
            attempts: history.length,
            history,
            key: idempotencyKey,
            replayed: res.headers.get('bt-idempotency-replayed') === 'true',
          };
        }
        if (!retryable(res.status, res.headers)) {
          ended(end, outcome);
          this.recorder.abandoned.push({
            kind,
            key: idempotencyKey,
            path,
            outcome,
            refused: true,
            detail: answer.slice(0, 300),
            at: start,
            history,
          });
          throw new OperationFailed(kind, outcome, answer.slice(0, 300), history);
        }
        const after = Number(res.headers.get('retry-after'));
        if (Number.isFinite(after) && after > 0) retryAfterMs = after * 1000;
      } catch (error) {
        if (error instanceof OperationFailed) throw error;
        outcome = errorCode(error);
        attempt(start, outcome, false);
      }
      if (Date.now() > deadline) {
        ended(this.recorder.now(), outcome);
        const detail = `gave up after ${history.length} attempts`;
        this.recorder.abandoned.push({
          kind,
          key: idempotencyKey,
          path,
          outcome,
          detail,
          at: start,
          history,
        });
        throw new OperationFailed(kind, outcome, detail, history);
      }
      // Backoff with jitter, capped at 2 s; a Retry-After is honoured as it is.
      await sleep(retryAfterMs ?? backoff * (0.5 + Math.random()));
      backoff = Math.min(backoff * 2, 2_000);
    }
  }
}
