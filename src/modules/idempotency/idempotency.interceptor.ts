import {
  CallHandler,
  ExecutionContext,
  Injectable,
  Logger,
  NestInterceptor,
  StreamableFile,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { defer, lastValueFrom, Observable } from 'rxjs';
import type { RequestWithPrincipal } from '../../common/auth/principal';
import { isClaimedAfterBody } from '../../common/context/claimed-after-body.decorator';
import { isNeverReplayed } from '../../common/context/never-replayed.decorator';
import { conflict, invalidField, ProblemException } from '../../common/errors/problem.exception';
import { IdempotencyService, StoredResponse } from './idempotency.service';

import { BodyClaim, ReplayInstead, RequestClaim } from './request-claim';
import type { RequestWithOrigin } from '../../common/unit-of-work/origin.decorator';

export const IDEMPOTENCY_HEADER = 'bt-idempotency-key';
export const REPLAYED_HEADER = 'BT-IDEMPOTENCY-REPLAYED';
const KEY_FORMAT = /^[\x20-\x7e]{1,255}$/;
const METHODS = new Set(['POST', 'PUT', 'PATCH']);
const JSON_TYPE = 'application/json; charset=utf-8';

/** What the handler returned, as the bytes sent and stored: the first response and every replay are identical. */
function serialize(result: unknown, res: Response): StoredResponse {
  const headers: Record<string, string> = {};
  const location = res.getHeader('location');
  if (typeof location === 'string') headers.location = location;
  if (result === undefined || result === null)
    return { status: res.statusCode, headers, body: Buffer.alloc(0) };
  headers['content-type'] = JSON_TYPE;
  return { status: res.statusCode, headers, body: Buffer.from(JSON.stringify(result), 'utf8') };
}

function send(response: StoredResponse, res: Response): StreamableFile | undefined {
  res.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (!response.body.length) return undefined;
  return new StreamableFile(response.body, {
    type: response.headers['content-type'],
    length: response.body.length,
  });
}

/**
 * `BT-IDEMPOTENCY-KEY` on POST, PUT and PATCH. The key is claimed before the handler runs, and the claim is
 * handed to the handler's change through its origin (`@Origin()`): the change stores the 2xx response
 * with itself, so a change is never committed without its record. A handler that commits several changes
 * (a payment, around its vendor call) pins what it creates on the claim, so that a retry after its process
 * died answers that resource instead of making another; its response is stored after it. A failure
 * releases the key. The header is ignored on other methods, on routes without a caller, and on routes that
 * answer with a credential (`@NeverReplayed`); a response holding data in clear (withheld) is answered but
 * not stored.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();
    const res = context.switchToHttp().getResponse<Response>();
    const header = req.headers[IDEMPOTENCY_HEADER];
    if (
      header === undefined ||
      !METHODS.has(req.method) ||
      !req.principal ||
      isNeverReplayed(this.reflector, context)
    )
      return next.handle();
    const who = req.principal;
    const afterBody = isClaimedAfterBody(this.reflector, context);
    return defer(async () => {
      const key = Array.isArray(header) ? header.join(',') : header;
      if (!KEY_FORMAT.test(key))
        throw invalidField('BT-IDEMPOTENCY-KEY', 'must be 1 to 255 printable ASCII characters');
      const claimWith = async (body: unknown): Promise<RequestClaim> => {
        const scope = await this.idempotency.scopeFor(who, key, {
          method: req.method,
          path: req.originalUrl,
          body,
        });
        const outcome = await this.idempotency.claim(scope);
        switch (outcome.kind) {
          case 'mismatch':
            throw new ProblemException(
              422,
              'This idempotency key was used with a different request (method, path or body).',
              { code: 'idempotency_key_reused' },
            );
          case 'in-flight':
            throw conflict('A request with this idempotency key is still being processed; retry shortly.', {
              'Retry-After': '1',
            });
          case 'replay':
            throw new ReplayInstead(outcome.response);
        }
        return new RequestClaim(this.idempotency, scope, outcome.claimId, outcome.resumed, (result) =>
          serialize(result, res),
        );
      };
      // The claim travels to the handler's change through its origin (`@Origin()`): the change records
      // the response with itself, pins what it creates before a vendor call, or withholds the answer. A
      // handler that reads the body itself claims once it has the body's digest.
      let claim: RequestClaim | BodyClaim;
      let result: unknown;
      try {
        claim = afterBody
          ? new BodyClaim((digest) => claimWith({ body_sha256: digest }))
          : await claimWith(req.body as unknown);
        (req as RequestWithOrigin).idempotency = claim;
        try {
          result = await lastValueFrom(next.handle(), { defaultValue: undefined });
        } catch (error) {
          const held = claim instanceof BodyClaim ? claim.held : claim;
          if (held) await this.idempotency.release(held.scope, held.claimId);
          throw error;
        }
      } catch (error) {
        if (!(error instanceof ReplayInstead)) throw error;
        res.setHeader(REPLAYED_HEADER, 'true');
        return send(error.response, res);
      }
      const held = claim instanceof BodyClaim ? claim.held : claim;
      // A handler claimed after its body that answered before it claimed: nothing to store.
      if (!held) return result;
      if (held.recorded) return send(held.recorded, res);
      if (held.withheld) {
        await this.idempotency.release(held.scope, held.claimId);
        return result;
      }
      // No change recorded the response (the handler committed several changes, as a payment does around its
      // vendor call, or none): the record is completed after it.
      const stored = serialize(result, res);
      if (!(await this.idempotency.complete(held.scope, held.claimId, stored)))
        this.logger.warn('an idempotency claim was taken over while its request ran past the claim timeout');
      return send(stored, res);
    });
  }
}
