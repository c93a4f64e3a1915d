import { BadRequestException, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { ProblemException } from './problem.exception';
import { toProblem } from './problem-details';
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
