import type { ProblemException } from '../../../common/errors/problem.exception';
import { UpdateTokenDto, UpdateTokenPipe } from './update-token.dto';

describe('UpdateTokenPipe (PATCH /tokens/{id})', () => {
  const pipe = new UpdateTokenPipe();
  const problem = async (body: unknown): Promise<ProblemException> =>
    pipe.transform(body).then(
      () => {
        throw new Error('accepted');
      },
      (error: ProblemException) => error,
    );

  it('passes a valid patch through as an UpdateTokenDto, values as sent', async () => {
    const body = { metadata: { a: null, b: 'x' }, search_indexes: null, expires_at: '2099-01-01T00:00:00Z' };
    const dto = await pipe.transform(body);
    expect(dto).toBeInstanceOf(UpdateTokenDto);
    expect(dto).toMatchObject(body);
  });

  it('refuses anything but an object', async () => {
    for (const body of [undefined, null, [], [{ metadata: {} }], 'x'])
      expect((await problem(body)).detail).toBe('The body must be an object.');
  });

  it('names each bad field with one message, data and type as immutable', async () => {
    const { extras } = await problem({
      data: 'x',
      type: null,
      colour: 1,
      metadata: ['a'],
      search_indexes: [''],
      expires_at: '2099-01-01 00:00',
      fingerprint_expression: 5,
    });
    expect(extras.errors).toEqual({
      colour: ['property colour should not exist'],
      data: ['data cannot be changed: token data is immutable'],
      type: ['type cannot be changed: token data is immutable'],
      metadata: ['metadata must be an object'],
      search_indexes: ['search_indexes must be an array of at most 20 non-empty expressions'],
      expires_at: [expect.stringMatching(/^expires_at must be an ISO 8601 date-time/)],
      fingerprint_expression: ['fingerprint_expression must be a non-empty expression'],
    });
  });

  it('reports __proto__, constructor and the other names of Object.prototype instead of dropping them', async () => {
    const body = JSON.parse('{"__proto__": {"a": 1}, "constructor": 1, "hasOwnProperty": 2}') as unknown;
    const { extras } = await problem(body);
    expect(Object.keys(extras.errors ?? {})).toEqual(['__proto__', 'constructor', 'hasOwnProperty']);
  });
});
