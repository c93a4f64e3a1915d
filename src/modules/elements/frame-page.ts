/** The element types a page may create, and the hidden frame every `init` adds (it holds the key). */
export const ELEMENT_TYPES = ['card', 'cardNumber', 'cardExpirationDate', 'cardVerificationCode'] as const;
export const FRAME_TYPES = [...ELEMENT_TYPES, 'controller'] as const;
export type FrameType = (typeof FRAME_TYPES)[number];

export const isFrameType = (value: unknown): value is FrameType =>
  typeof value === 'string' && (FRAME_TYPES as readonly string[]).includes(value);

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The one Content-Security-Policy of a frame: only the vault's own script and API, no inline script, no
 * styles but those its script sets through the CSSOM, and embeddable only by the application's allowed
 * origins (none: nowhere). Origins reach it only after `checkAllowedOrigins` (no space, quote or `;`).
 */
export function frameContentSecurityPolicy(allowedOrigins: string[]): string {
  const ancestors = allowedOrigins.length ? allowedOrigins.join(' ') : "'none'";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "connect-src 'self'",
    `frame-ancestors ${ancestors}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

/**
 * The document of a frame: no inline script; the allowed origins and the element type in `<meta>` for
 * frame.js, which accepts messages only from an embedding page of one of those origins.
 */
export function frameHtml(element: FrameType, allowedOrigins: string[]): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="vault-allowed-origins" content="${escapeHtml(allowedOrigins.join(' '))}">`,
    `<meta name="vault-element" content="${escapeHtml(element)}">`,
    '<title>Card details</title>',
    '<script src="/elements/v1/frame.js" defer></script>',
    '</head><body></body></html>',
  ].join('');
}
