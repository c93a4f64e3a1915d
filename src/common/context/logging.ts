import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
import { destination, type DestinationStream } from 'pino';
import type { AppConfig } from '../../config/app-config';
import { assignTraceId } from './trace-id';

/** Header and body paths that must never reach a log line. */
export const REDACTED_PATHS = [
  'req.headers["bt-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.body',
  'res.headers["set-cookie"]',
];

/**
 * The approval page's one-time token is a capability: it never reaches a log line; nor does what a
 * vendor appends to the 3-D Secure return under the same path (Stripe's client secret).
 */
export function redactUrl(url: string): string {
  return url.replace(
    /(\/orchestration\/approvals\/)([^/?#]+)(\/[^?#]*)?(\?[^#]*)?/,
    (_, prefix, _token, rest) => `${prefix}[redacted]${rest ?? ''}`,
  );
}

let stdout: DestinationStream | undefined;

/** Lines are written in blocks of this many bytes at least, */
const LOG_BLOCK_BYTES = 4096;
/** and at least this often (ms): what a killed process (`kill -9`) can lose of its log. */
const LOG_FLUSH_MS = 100;

/**
 * Standard output as every logger of the process writes to it (nestjs-pino makes two pino instances,
 * one before the first request and one after, and each would otherwise buffer on its own). main.ts
 * writes its start-up lines here too, so that they come out in the order they were written. Lines are
 * gathered into blocks (one write for many requests' lines, docs/benchmarks.md), flushed every 100 ms
 * and at exit.
 */
export function stdoutStream(): DestinationStream {
  return (stdout ??= destination({
    dest: 1,
    sync: false,
    minLength: LOG_BLOCK_BYTES,
    periodicFlush: LOG_FLUSH_MS,
  }));
}

/** nestjs-pino settings: JSON lines, the request's trace id on every line, secrets redacted. */
export function loggerParams(config: AppConfig, stream?: DestinationStream): Params {
  return {
    pinoHttp: {
      level: config.LOG_LEVEL,
      stream: stream ?? stdoutStream(),
      genReqId: (req: IncomingMessage, res: ServerResponse) => assignTraceId(req, res),
      // The request's logger is made with the trace id bound once (no second child logger per request
      // for a custom property): every line of the request carries `trace_id`.
      customAttributeKeys: { reqId: 'trace_id' },
      customLogLevel: (_req, res, err) =>
        err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({
          id: req.id,
          method: req.method,
          url: redactUrl(req.url),
        }),
        res: (res: { statusCode: number }) => ({ status_code: res.statusCode }),
      },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      quietReqLogger: true,
    },
  };
}
