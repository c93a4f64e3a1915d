import { BadRequestException, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { ProblemException } from './problem.exception';
import {
  QueryFailedError,
  QueryRunnerAlreadyReleasedError,
  QueryRunnerProviderAlreadyReleasedError,
} from 'typeorm';
import { databaseUnavailable, toProblem } from './problem-details';
import { flattenValidationErrors } from './validation';

describe('toProblem', () => {
  it('renders a ProblemException with its errors, code and headers', () => {
    const rendered = toProblem(
      new ProblemException(409, 'busy', { code: 'in_flight', headers: { 'Retry-After': '1' } }),
    );
    expect(rendered).toEqual({
      body: { type: 'about:blank', title: 'Conflict', status: 409, detail: 'busy', code: 'in_flight' },
      headers: { 'Retry-After': '1' },
      unexpected: false,
    });
  });

  it('keeps the message of Nest HTTP exceptions and gives each a code', () => {
    expect(toProblem(new NotFoundException('Token not here')).body).toMatchObject({
      status: 404,
      title: 'Not Found',
      detail: 'Token not here',
      code: 'not_found',
    });
    expect(toProblem(new BadRequestException(['a', 'b'])).body).toMatchObject({
      detail: 'a; b',
      code: 'bad_request',
    });
    expect(toProblem(new ServiceUnavailableException()).body.status).toBe(503);
  });

  it("answers the router's own 404 without echoing the path", () => {
    expect(toProblem(new NotFoundException('Cannot GET /tokens/4242424242424242/x')).body).toEqual({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: 'No route matches this method and path.',
      code: 'not_found',
    });
  });

  it('maps body-parser errors by type', () => {
    expect(toProblem({ type: 'entity.too.large', status: 413 }).body.status).toBe(413);
    expect(toProblem({ type: 'entity.parse.failed', status: 400 }).body.status).toBe(400);
  });

  it('turns anything else into a 500 that says nothing of internals', () => {
    const rendered = toProblem(new Error('connection to 10.0.0.5 refused; card 4242424242424242'), 'trace-1');
    expect(rendered.unexpected).toBe(true);
    expect(rendered.body).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred.',
      trace_id: 'trace-1',
    });
  });
});

describe('databaseUnavailable: a 503 that heals, not a 500', () => {
  const failed = (message: string, code?: string) =>
    Object.assign(new QueryFailedError('SELECT 1', [], new Error(message)), code ? { code } : {});

  it('knows what a restart, a pooler or a failover answers', () => {
    for (const error of [
      failed('terminating connection due to administrator command', '57P01'),
      failed('the database system is starting up', '57P03'),
      failed('server conn crashed?', '08P01'),
      failed('server login has been failing, try again later (server_login_retry)', '08P01'),
      // A node demoted under a connection (a failover): it takes no writes.
      failed('cannot execute INSERT in a read-only transaction', '25006'),
      failed('Connection terminated unexpectedly'),
      failed('terminating connection due to unexpected postmaster exit', '57P01'),
      new Error('Client was closed and is not queryable'),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      // The next statement of a transaction whose connection broke under it.
      new QueryRunnerProviderAlreadyReleasedError(),
      // Its COMMIT, after the connection broke: never sent, so nothing committed.
      new QueryRunnerAlreadyReleasedError(),
    ])
      expect([error.message, databaseUnavailable(error)]).toEqual([error.message, true]);
  });

  it('is false for errors of the statement itself', () => {
    for (const error of [
      failed('duplicate key value violates unique constraint', '23505'),
      failed('syntax error at or near "SELEC"', '42601'),
      new Error('Cannot read properties of undefined'),
    ])
      expect(databaseUnavailable(error)).toBe(false);
  });
});

describe('flattenValidationErrors', () => {
  it('builds JSON paths with array indexes in brackets', () => {
    const errors = flattenValidationErrors([
      { property: 'name', constraints: { isString: 'name must be a string' }, children: [] },
      {
        property: 'rules',
        children: [
          {
            property: '0',
            children: [
              { property: 'priority', constraints: { isInt: 'priority must be an integer' }, children: [] },
            ],
          },
        ],
      },
    ]);
    expect(errors).toEqual({
      name: ['name must be a string'],
      'rules[0].priority': ['priority must be an integer'],
    });
  });
});
