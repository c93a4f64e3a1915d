import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { json, raw } from 'express';
import { ProblemException } from '../errors/problem.exception';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Deeper JSON is refused: nothing in the API nests that far, and recursive walkers must not overflow. */
export const MAX_JSON_DEPTH = 32;

/** The nesting depth of a parsed JSON value, measured without recursion (it may be very deep). */
export function jsonDepth(value: unknown, limit = Infinity): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    const level = depth + 1;
    if (level > max) max = level;
    if (max > limit) return max;
    for (const child of Object.values(current as Record<string, unknown>)) stack.push([child, level]);
  }
  return max;
}

/**
 * JSON bodies up to 1 MiB, for `application/json` and any `+json` type (merge-patch). Parser errors
 * become problems here, because their messages quote the body and the body may hold a card number.
 */
export function jsonBodyParser(): RequestHandler {
  const parse = json({
    limit: BODY_LIMIT_BYTES,
    type: ['application/json', 'application/*+json'],
    strict: true,
  });
  return (req: Request, res: Response, next: NextFunction) =>
    parse(req, res, (err?: unknown) => {
      if (!err) {
        if (jsonDepth(req.body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
          return next(
            new ProblemException(400, `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, {
              code: 'too_deep',
            }),
          );
        return next();
      }
      const { type, status } = err as { type?: string; status?: number };
      if (type === 'entity.too.large') {
        return next(
          new ProblemException(413, 'The request body exceeds the 1 MiB limit.', {
            code: 'payload_too_large',
          }),
        );
      }
      if (type === 'entity.parse.failed') {
        return next(
          new ProblemException(400, 'The request body is not valid JSON.', { code: 'malformed_json' }),
        );
      }
      if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
        return next(
          new ProblemException(415, 'The request body encoding is not supported.', {
            code: 'unsupported_encoding',
          }),
        );
      }
      return next(
        new ProblemException(
          status && status >= 400 && status < 500 ? status : 400,
          'The request body could not be read.',
          {
            code: 'unreadable_body',
          },
        ),
      );
    });
}

/**
 * Any body up to 1 MiB as bytes, whatever its type (the proxy forwards bodies it does not parse). Runs
 * before the JSON parser on the routes it is mounted on, which then leaves the body alone. Its errors
 * carry `extraHeaders` (the proxy marks its own errors).
 */
export function rawBodyParser(extraHeaders: Record<string, string> = {}): RequestHandler {
  const parse = raw({ limit: BODY_LIMIT_BYTES, type: () => true });
  return (req: Request, res: Response, next: NextFunction) =>
    parse(req, res, (err?: unknown) => {
      if (!err) return next();
      const { type } = err as { type?: string };
      const headers = extraHeaders;
      if (type === 'entity.too.large')
        return next(
          new ProblemException(413, 'The request body exceeds the 1 MiB limit.', {
            code: 'payload_too_large',
            headers,
          }),
        );
      return next(
        new ProblemException(400, 'The request body could not be read.', {
          code: 'unreadable_body',
          headers,
        }),
      );
    });
}
