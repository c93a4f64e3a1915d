/**
 * The path a proxied request appends to its destination. A pre-configured proxy's `destination_url`
 * is a boundary: whatever the caller writes after `/proxy`, the request goes under that URL's path.
 * The URL parser reads `\` as `/` and resolves `.` and `..` segments (`%2e` too), and a destination may
 * decode `%2F`, `%5C` or a percent-encoded `%` again before routing; so every separator other than `/`,
 * and every dot segment, in any of these encodings, is refused outright, and the URL finally built is
 * checked to lie under the base.
 */

/** Percent-encodings that can turn into a separator or a dot once decoded (`%25` is `%` itself). */
const DANGEROUS_ESCAPES = /%(2e|2f|5c|25)/gi;

const decodeDangerous = (text: string): string =>
  text.replace(DANGEROUS_ESCAPES, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** Why a raw (percent-encoded) proxied path is refused, or undefined when it may be appended. */
export function pathProblem(path: string): string | undefined {
  const reason = 'must not hold "\\", an encoded "/" or "\\", or a "." or ".." segment in any encoding';
  if (path.includes('\\')) return reason;
  for (const segment of path.split('/')) {
    // Decoded as often as a chain of decoders could (each pass shortens it, so this ends).
    let decoded = segment;
    for (let next = decodeDangerous(decoded); next !== decoded; next = decodeDangerous(decoded)) {
      decoded = next;
      if (decoded.includes('/') || decoded.includes('\\')) return reason;
    }
    // `..;x` is `..` to servers that strip path parameters.
    const name = decoded.split(';')[0];
    if (name === '.' || name === '..') return reason;
  }
  return undefined;
}

/**
 * `base` with the proxied path appended to its path and the query string to its own; undefined when the
 * result would not lie under the base (another origin, or a path outside the base path).
 */
export function destinationUrl(base: URL, path: string, query: string): URL | undefined {
  const url = new URL(base.toString());
  const basePath = url.pathname.replace(/\/+$/, '');
  if (path && path !== '/') url.pathname = basePath + path;
  else if (path === '/' && !url.pathname.endsWith('/')) url.pathname += '/';
  if (query) url.search = url.search ? `${url.search.slice(1)}&${query}` : query;
  const under =
    url.origin === base.origin && (url.pathname === base.pathname || url.pathname.startsWith(`${basePath}/`));
  return under ? url : undefined;
}
