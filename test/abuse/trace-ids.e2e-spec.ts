import request from 'supertest';
import { startApp, TestApp } from '../support/app';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Abuse class: trace ids (docs/reliability.md). `BT-TRACE-ID` is echoed and written on every log line
 * of the request, so only 1 to 128 characters of `[A-Za-z0-9._:-]` are kept; anything else is
 * replaced by a new id and never reaches the log.
 */
describe('abuse: trace ids', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ LOG_LEVEL: 'debug' });
  });
  afterAll(() => t.close());

  it.each([
    ['too long', `a${'b'.repeat(128)}`],
    ['spaces and quotes', 'x" injected="1'],
    ['markup', '<script>alert(1)</script>'],
    ['a log-line forgery', 'abc","level":60,"msg":"forged'],
    ['percent-encoded', 'abc%0d%0aSet-Cookie'],
    ['a slash', 'a/b'],
    ['a tab', 'a\tb'],
  ])('replaces a trace id with %s', async (_name, given) => {
    const res = await request(t.http).get('/health/live').set('BT-TRACE-ID', given);
    expect(res.headers['bt-trace-id']).not.toBe(given);
    expect(res.headers['bt-trace-id']).toMatch(UUID);
    const problem = await request(t.http).get('/applications').set('BT-TRACE-ID', given);
    expect(problem.headers['bt-trace-id']).toMatch(UUID);
    expect(problem.text).not.toContain(given);
    expect(t.logs.join('\n')).not.toContain(given);
  });

  it.each([['a'], ['order:2026-11-23.abc_DEF-9'], ['x'.repeat(128)], ['0af7651916cd43dd8448eb211c80319c']])(
    'keeps a well-formed trace id %s',
    async (given) => {
      const res = await request(t.http).get('/applications').set('BT-TRACE-ID', given);
      expect(res.headers['bt-trace-id']).toBe(given);
      expect(t.logs.some((line) => line.includes(`"trace_id":"${given}"`))).toBe(true);
    },
  );
});
