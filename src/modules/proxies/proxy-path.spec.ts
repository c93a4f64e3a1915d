import { destinationUrl, pathProblem } from './proxy-path';

describe('proxied paths', () => {
  it.each([
    '/x\\..\\..\\admin',
    '/x%5Cadmin',
    '/x%5cadmin',
    '/x%2Fadmin',
    '/x%2fadmin',
    '/..',
    '/.',
    '/a/./b',
    '/a/../b',
    '/a/%2e%2e/b',
    '/a/%2E%2e/b',
    '/a/.%2e/b',
    '/a/%2e/b',
    '/a/%252e%252e/b',
    '/a/%25252E./b',
    '/a%252Fb',
    '/a%255Cb',
    '/a/..;x/b',
  ])('refuses %s', (path) => {
    expect(pathProblem(path)).toMatch(/must not hold/);
  });

  it.each(['', '/', '/a/b/c', '/v1/file.json', '/a/..b/c../...', '/a%20b', '/100%25', '/a%2541', '//x'])(
    'accepts %s',
    (path) => {
      expect(pathProblem(path)).toBeUndefined();
    },
  );

  it('appends the path and the query under the base', () => {
    const base = new URL('http://dest.example/base/api?fixed=1');
    expect(destinationUrl(base, '/a/b', 'x=1')?.toString()).toBe(
      'http://dest.example/base/api/a/b?fixed=1&x=1',
    );
    expect(destinationUrl(base, '', '')?.pathname).toBe('/base/api');
    expect(destinationUrl(base, '/', '')?.pathname).toBe('/base/api/');
    expect(destinationUrl(new URL('http://dest.example/base/'), '/a', '')?.pathname).toBe('/base/a');
    expect(destinationUrl(new URL('http://dest.example'), '/a', '')?.pathname).toBe('/a');
  });

  it('as a last check, refuses whatever the URL parser would resolve outside the base', () => {
    const base = new URL('http://dest.example/base/api');
    for (const path of ['/../../admin', '/x\\..\\..\\..\\admin', '/%2e%2e/%2e%2e/admin', '/../api-other'])
      expect(destinationUrl(base, path, '')).toBeUndefined();
  });
});
