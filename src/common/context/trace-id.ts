import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export const TRACE_HEADER = 'BT-TRACE-ID';
/** What is echoed and written on log lines is plain (no quotes, markup, escapes). */
const ACCEPTED = /^[A-Za-z0-9._:-]{1,128}$/;

type WithTraceId = IncomingMessage & { traceId?: string };

/**
 * Gives the request its trace id: the caller's `BT-TRACE-ID` when it is 1 to 128 characters of
 * `[A-Za-z0-9._:-]`, otherwise a new uuid; echoes it on the response. Idempotent.
 */
export function assignTraceId(req: IncomingMessage, res?: ServerResponse): string {
  const request = req as WithTraceId;
  if (request.traceId) return request.traceId;
  const given = req.headers[TRACE_HEADER.toLowerCase()];
  const traceId = typeof given === 'string' && ACCEPTED.test(given) ? given : randomUUID();
  request.traceId = traceId;
  if (res && !res.headersSent) res.setHeader(TRACE_HEADER, traceId);
  return traceId;
}

export function traceIdOf(req: IncomingMessage): string | undefined {
  return (req as WithTraceId).traceId;
}

export function traceIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  assignTraceId(req, res);
  next();
}
