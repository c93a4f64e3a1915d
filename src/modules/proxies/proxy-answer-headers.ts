import type { NextFunction, Request, Response } from 'express';
import type { OutgoingHttpHeaders } from 'node:http';
import { HOP_BY_HOP_HEADERS } from '../../common/outbound/outbound.types';

/**
 * The proxy answers from the service's own origin, so a destination must not speak for it there: every
 * proxy answer, the destination's and the proxy's own errors alike, carries these, and a destination's
 * answer never replaces them.
 */
export const PROXY_ANSWER_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
};

/**
 * Headers of a destination's answer that never come back: cookies it would set on the service's origin,
 * and the headers by which the service itself tells a browser what its origin allows (its security
 * headers, CORS) or a client what the service did (`BT-*`, such as `BT-PROXY-ERROR` and `BT-TRACE-ID`).
 */
const DROPPED =
  /^(?:set-cookie2?|bt-.*|access-control-.*|content-security-policy(?:-report-only)?|x-content-type-options|x-frame-options|strict-transport-security|cross-origin-.*|origin-agent-cluster|referrer-policy|x-dns-prefetch-control|x-download-options|x-permitted-cross-domain-policies|x-xss-protection)$/;

/** Mounted on `/proxy` before anything can answer, so that every answer there carries the headers. */
export function proxyAnswerHeaders(_req: Request, res: Response, next: NextFunction): void {
  for (const [name, value] of Object.entries(PROXY_ANSWER_HEADERS)) res.setHeader(name, value);
  next();
}

/**
 * Sets a destination's answer headers on the response: hop-by-hop headers, cookies and the service's
 * own headers (DROPPED) left out, so that those stay as the service set them.
 */
export function copyDestinationHeaders(res: Response, headers: OutgoingHttpHeaders, method: string): void {
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP_HEADERS.has(lower) || DROPPED.test(lower)) continue;
    if (lower === 'content-length' && method !== 'HEAD') continue;
    res.setHeader(name, value);
  }
}
