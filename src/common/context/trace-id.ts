import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export const TRACE_HEADER = 'BT-TRACE-ID';
const ACCEPTED = /^[\x21-\x7e]{1,128}$/;

type WithTraceId = IncomingMessage & { traceId?: string };

/**
 * Gives the request its trace id: the caller's `BT-TRACE-ID` when it is printable ASCII of at most
 * 128 characters, otherwise a new uuid; echoes it on the response. Idempotent.
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
