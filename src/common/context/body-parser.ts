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

/** The media types a JSON body may be sent as (`+json` covers merge-patch). */
export const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * A POST, PUT or PATCH that carries a body must say it is JSON: without the header the JSON parser
 * would leave the body unread, and the request would fail on "missing" fields it does contain. A 415
 * names the types accepted. A request without a body (POST /sessions) needs no Content-Type; the proxy
 * (which forwards any body) and the approval page's form posts (whose bodies are not read) are exempt.
 */
export function requireJsonContentType(exempt: RegExp): RequestHandler {
  const readChunked = raw({ limit: BODY_LIMIT_BYTES, type: () => true });
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'POST' && req.method !== 'PUT' && req.method !== 'PATCH') return next();
    if (exempt.test(req.path) || req.headers['content-length'] === '0') return next();
    // null: no body at all (neither Content-Length nor Transfer-Encoding).
    if (req.is(JSON_TYPES) !== false) return next();
    // Chunked without a type (Node's http.request for a POST it ends at once): only an empty one is no body.
    if (req.headers['content-type'] === undefined && req.headers['content-length'] === undefined)
      return readChunked(req, res, (err?: unknown) => {
        if (err) return next(unsupported(req));
        if ((req.body as Buffer | undefined)?.length) return next(unsupported(req));
        req.body = undefined;
        return next();
      });
    return next(unsupported(req));
  };
}

function unsupported(req: Request): ProblemException {
  const accepted =
    req.method === 'PATCH' ? 'application/json or application/merge-patch+json' : 'application/json';
  const message = `must be ${accepted} for a request with a body`;
  const list = accepted.replace(' or ', ', ');
  return new ProblemException(
    415,
    `${req.headers['content-type'] === undefined ? 'Missing' : 'Unsupported'} Content-Type: the body ${message}.`,
    {
      code: 'unsupported_media_type',
      errors: { 'Content-Type': [message] },
      headers: req.method === 'PATCH' ? { Accept: list, 'Accept-Patch': list } : { Accept: list },
    },
  );
}
