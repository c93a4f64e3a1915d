import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { json } from 'express';
import { ProblemException } from '../errors/problem.exception';

export const BODY_LIMIT_BYTES = 1024 * 1024;

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
      if (!err) return next();
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
