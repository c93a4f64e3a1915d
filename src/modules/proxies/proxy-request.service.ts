import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { ApiKeyAuthenticator } from '../../common/auth/api-key.guard';
import { RateLimiter } from '../../common/throttling/rate-limiter';
import type { Principal, RequestWithPrincipal } from '../../common/auth/principal';
import type { AuditActor } from '../../common/audit/audit.types';
import { MAX_JSON_DEPTH, jsonDepth } from '../../common/context/body-parser';
import { DomainException } from '../../common/errors/domain.exception';
import { OutboundHttp } from '../../common/outbound/outbound-http.service';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  HOP_BY_HOP_HEADERS,
  OutboundError,
  OutboundFailure,
  OutboundResponse,
} from '../../common/outbound/outbound.types';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { TokensService } from '../tokens/tokens.service';
import {
  ExpressionError,
  findExpressions,
  MAX_TOKENS,
  RenderedSizes,
  renderBytes,
  renderJson,
  renderText,
  select,
  stringsOf,
  TokenExpression,
  Values,
} from './detokenize';
import { destinationUrl, pathProblem } from './proxy-path';
import { ProxyEntity } from './entities/proxy.entity';
import { ProxiesErrorCode, ProxiesException } from './proxies.errors';
import { ProxiesRepository } from './proxies.repository';
import { PROXY_KEY_FORMAT } from './proxies.service';

/** What the proxy route hands over: the request as it came, with the part of the path after `/proxy`. */
export interface ProxiedRequest {
  method: string;
  /** The raw (percent-encoded) path after `/proxy`: '' or '/...'. */
  path: string;
  /** The raw query string without its '?', '' when there is none. */
  query: string;
  headers: IncomingHttpHeaders;
  body?: Buffer;
  /** The express request, for authentication when the proxy needs it. */
  http: RequestWithPrincipal;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * What the proxy sends at most, once detokenized (values can be far longer than the expressions naming
 * them): checked on sizes computed beforehand, so that a request over them is refused before anything
 * is built.
 */
export const MAX_RENDERED = {
  bodyBytes: 10 * 1024 * 1024,
  headerBytes: 16 * 1024,
  queryLength: 8 * 1024,
} as const;

const invalid = (detail: string, errors?: Record<string, string[]>): ProxiesException =>
  new ProxiesException(ProxiesErrorCode.Invalid, detail, errors);

const FAILURES: Record<OutboundFailure, (error: OutboundError) => DomainException> = {
  invalid_url: (e) => invalid(`The destination URL is not usable: ${e.message}`),
  invalid_request: (e) => invalid(`The request cannot be sent as it is: ${e.message}`),
  destination_not_allowed: (e) =>
    new ProxiesException(
      ProxiesErrorCode.DestinationNotAllowed,
      `The destination is not allowed: ${e.message}`,
    ),
  unreachable: (e) =>
    new ProxiesException(ProxiesErrorCode.Unreachable, `The destination is unreachable: ${e.message}`),
  timeout: () => new ProxiesException(ProxiesErrorCode.Timeout, 'The destination did not answer in time.'),
  response_too_large: () =>
    new ProxiesException(
      ProxiesErrorCode.ResponseTooLarge,
      `The destination's answer is over the ${DEFAULT_MAX_RESPONSE_BYTES / 1024 / 1024} MiB limit.`,
    ),
};

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/** Where a request goes, on whose behalf, and what it may detokenize. */
interface Route {
  /** The destination before the proxied path and query string are added. */
  base: URL;
  /** The caller, when there is one; an anonymous request detokenizes nothing. */
  who?: Principal;
  actor: AuditActor;
  /** `entity_id` of the audit row: the proxy, or for the ephemeral proxy the calling application. */
  auditId: string;
}

/**
 * The detokenizing proxy: routes a request to `BT-PROXY-URL` or the destination of
 * the proxy `BT-PROXY-KEY` names, replaces token expressions by the data the caller may use, sends it
 * through the outbound component and hands the destination's answer back as it is.
 */
@Injectable()
export class ProxyRequestService {
  constructor(
    private readonly proxies: ProxiesRepository,
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly limits: RateLimiter,
    private readonly tokens: TokensService,
    private readonly outbound: OutboundHttp,
    private readonly work: UnitOfWork,
  ) {}

  async forward(request: ProxiedRequest): Promise<OutboundResponse> {
    const problem = pathProblem(request.path);
    if (problem) throw invalid(`The proxied path ${problem}.`, { path: [problem] });
    const route = await this.route(request);
    const outgoing = await this.detokenized(request, route.who);
    const destination = destinationUrl(route.base, request.path, outgoing.query);
    if (!destination)
      throw invalid('The proxied path does not stay under the destination URL.', {
        path: ['must stay under the destination URL'],
      });
    const method = request.method.toUpperCase();
    const host = destination.host;
    try {
      const answer = await this.outbound.send({
        url: destination.toString(),
        method,
        headers: outgoing.headers,
        body: outgoing.body,
      });
      await this.recordUse(route, `${method} to ${host} answered ${answer.status}`);
      return answer;
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      await this.recordUse(route, `${method} to ${host} failed: ${error.failure}`);
      throw FAILURES[error.failure](error);
    }
  }

  private async route(request: ProxiedRequest): Promise<Route> {
    const proxyKey = single(request.headers['bt-proxy-key']);
    const proxyUrl = single(request.headers['bt-proxy-url']);
    if (proxyKey !== undefined && proxyUrl !== undefined)
      throw invalid('Give either BT-PROXY-KEY or BT-PROXY-URL, not both.', {
        'BT-PROXY-URL': ['must not be given with BT-PROXY-KEY'],
      });
    if (proxyKey !== undefined) return this.configuredRoute(request, proxyKey);
    if (proxyUrl === undefined)
      throw invalid('A proxy request needs a BT-PROXY-URL or a BT-PROXY-KEY header.', {
        'BT-PROXY-URL': ['is required when BT-PROXY-KEY is absent'],
      });
    const who = await this.caller(request);
    let base: URL;
    try {
      base = new URL(proxyUrl);
    } catch {
      throw invalid('BT-PROXY-URL is not an absolute URL.', {
        'BT-PROXY-URL': ['must be an absolute http(s) URL'],
      });
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw invalid('BT-PROXY-URL must use http or https.', { 'BT-PROXY-URL': ['must use http or https'] });
    return {
      base,
      who,
      actor: actorOf(who),
      auditId: who.applicationId,
    };
  }

  /**
   * A request without a `BT-API-KEY` is identified by its proxy key alone: an unknown one counts as a
   * failed authentication of the client address (429 past AUTH_FAILURES_PER_MINUTE), a known one counts
   * against the proxy key's rate limit. A request with a key was authenticated and counted by the guards.
   */
  private async configuredRoute(request: ProxiedRequest, key: string): Promise<Route> {
    const anonymous = !request.http.principal;
    const proxy: ProxyEntity | null = PROXY_KEY_FORMAT.test(key) ? await this.proxies.findByKey(key) : null;
    if (!proxy) {
      if (anonymous) this.authenticator.recordFailure(request.http);
      throw new ProxiesException(ProxiesErrorCode.NotFound, 'No proxy has this key.');
    }
    if (anonymous) await this.limits.consume(key);
    const base = new URL(proxy.destinationUrl);
    if (!proxy.requireAuth)
      return {
        base,
        actor: { tenantId: proxy.tenantId, applicationId: null, anonymous: true },
        auditId: proxy.id,
      };
    const who = await this.caller(request);
    // Another tenant's key learns nothing of this proxy: the same answer as an unknown key.
    if (who.tenantId !== proxy.tenantId)
      throw new ProxiesException(ProxiesErrorCode.NotFound, 'No proxy has this key.');
    return { base, who, actor: actorOf(who), auditId: proxy.id };
  }

  /** The calling key: a private application key or an authorized session (401 and 403 otherwise). */
  private async caller(request: ProxiedRequest): Promise<Principal> {
    const who = await this.authenticator.authenticate(request.http);
    if (who.keyKind !== 'private' && who.keyKind !== 'session')
      throw new ProxiesException(
        ProxiesErrorCode.Forbidden,
        `The proxy needs a private or session key; the key given is a ${who.keyKind} key.`,
      );
    if (!who.authorized)
      throw new ProxiesException(ProxiesErrorCode.Forbidden, 'The session has not been authorized.');
    return who;
  }

  /**
   * The headers, body and query string to send: `BT-*`, hop-by-hop and framing headers removed, and
   * expressions replaced when there is a caller (an anonymous request sends them as they are). Their
   * sizes once detokenized are computed first and checked against MAX_RENDERED: a request over them is
   * refused before anything is built.
   */
  private async detokenized(
    request: ProxiedRequest,
    who: Principal | undefined,
  ): Promise<{ headers: Record<string, string | string[]>; body?: Buffer; query: string }> {
    const headers = forwardedHeaders(request.headers);
    const unchanged = { headers, body: request.body, query: request.query };
    if (!who) {
      checkSizes(new RenderedSizes(new Map()), headers, request.body?.length ?? 0, request.query.length);
      return unchanged;
    }
    const json = request.body !== undefined && JSON_TYPE.test(single(request.headers['content-type']) ?? '');
    const parsed = json ? parseJson(request.body!) : undefined;
    const bodyText = request.body !== undefined && !json ? request.body.toString('latin1') : undefined;
    const query: [string, string][] = request.query ? [...new URLSearchParams(request.query)] : [];
    const queryRendered = query.some(([name, value]) => name.includes('{{') || value.includes('{{'));

    const texts: string[] = [...Object.values(headers).flat(), ...query.flat()];
    if (parsed !== undefined) texts.push(...stringsOf(parsed.value));
    if (bodyText !== undefined) texts.push(bodyText);
    const expressions = this.expressionsOf(texts);
    const values = expressions.size ? await this.values(who, expressions) : new Map<string, unknown>();

    const sizes = new RenderedSizes(values);
    const bodySize =
      parsed !== undefined && expressions.size
        ? sizes.json(parsed.value)
        : bodyText !== undefined
          ? sizes.bytes(bodyText)
          : (request.body?.length ?? 0);
    const querySize = expressions.size && queryRendered ? sizes.queryString(query) : request.query.length;
    checkSizes(sizes, headers, bodySize, querySize);
    if (!expressions.size) return unchanged;

    for (const [name, value] of Object.entries(headers))
      headers[name] = Array.isArray(value)
        ? value.map((v) => renderText(v, values))
        : renderText(value, values);
    let body = request.body;
    if (parsed !== undefined) body = Buffer.from(JSON.stringify(renderJson(parsed.value, values)), 'utf8');
    else if (bodyText !== undefined) body = renderBytes(bodyText, values);
    const rendered = queryRendered
      ? new URLSearchParams(
          query.map(([name, value]): [string, string] => [
            renderText(name, values),
            renderText(value, values),
          ]),
        ).toString()
      : request.query;
    return { headers, body, query: rendered };
  }

  private expressionsOf(texts: string[]): Map<string, TokenExpression> {
    try {
      return findExpressions(texts);
    } catch (error) {
      if (error instanceof ExpressionError)
        throw invalid(`${error.expression}: ${error.message}`, { [error.expression]: [error.message] });
      throw error;
    }
  }

  /** The value of every expression: a token the caller may not use, or that does not exist, is a 400. */
  private async values(who: Principal, expressions: Map<string, TokenExpression>): Promise<Values> {
    const ids = [...new Set([...expressions.values()].map((e) => e.tokenId))];
    if (ids.length > MAX_TOKENS)
      throw invalid(`A proxy request may name at most ${MAX_TOKENS} tokens; it names ${ids.length}.`);
    const tokenValues = new Map<string, unknown>();
    const refused: Record<string, string[]> = {};
    for (const id of ids) {
      const value = await this.usableValue(who, id);
      if (value === undefined) {
        for (const e of expressions.values())
          if (e.tokenId === id)
            refused[e.text] = ['names a token that does not exist or that the key may not use'];
      } else tokenValues.set(id, value);
    }
    const names = Object.keys(refused);
    if (names.length)
      throw invalid(
        names.length === 1
          ? `${names[0]}: names a token that does not exist or that the key may not use.`
          : `${names.length} expressions name tokens that do not exist or that the key may not use.`,
        refused,
      );
    const values: Values = new Map();
    for (const [text, expression] of expressions)
      values.set(text, select(expression, tokenValues.get(expression.tokenId)));
    return values;
  }

  /** The value a token yields in the proxy: a card with its CVC while it is retained. */
  private async usableValue(who: Principal, id: string): Promise<unknown> {
    let token;
    try {
      // The expression grammar (detokenize.ts) only matches well-formed token ids.
      token = await this.tokens.loadForUse(who, id);
    } catch (error) {
      if (error instanceof DomainException && error.kind === 'forbidden') return undefined;
      throw error;
    }
    if (!token) return undefined;
    if (token.type !== 'card') return token.data;
    return {
      ...(token.data as Record<string, unknown>),
      ...(token.cvc !== undefined ? { cvc: token.cvc } : {}),
    };
  }

  /** The `use` row of a request that went out: a change of its own, one statement (it only inserts). */
  private async recordUse(route: Route, message: string): Promise<void> {
    await this.work.statement({ actor: route.actor }, async (change) => {
      change.audit({ entityType: 'proxy', entityId: route.auditId, operation: 'use', message });
    });
  }
}

function actorOf(who: Principal): AuditActor {
  return { tenantId: who.tenantId, applicationId: who.applicationId, sessionId: who.sessionId };
}

function forwardedHeaders(incoming: IncomingHttpHeaders): Record<string, string | string[]> {
  const named = new Set(
    (single(incoming.connection) ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    if (name.startsWith('bt-') || HOP_BY_HOP_HEADERS.has(name) || named.has(name)) continue;
    if (name === 'host' || name === 'content-length' || name === 'expect') continue;
    out[name] = value;
  }
  return out;
}

function parseJson(body: Buffer): { value: unknown } {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ProxiesException(ProxiesErrorCode.Invalid, 'The request body is not valid JSON.');
  }
  if (jsonDepth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
    throw invalid(`The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);
  return { value };
}

/** Refuses a request whose body, a header value or query string would be over MAX_RENDERED once detokenized. */
function checkSizes(
  sizes: RenderedSizes,
  headers: Record<string, string | string[]>,
  bodyBytes: number,
  queryLength: number,
): void {
  const over: Record<string, string[]> = {};
  if (bodyBytes > MAX_RENDERED.bodyBytes) over.body = ['must be at most 10 MiB once detokenized'];
  for (const [name, value] of Object.entries(headers))
    if ([value].flat().some((v) => sizes.text(v) > MAX_RENDERED.headerBytes))
      over[name] = ['must be at most 16 KiB once detokenized'];
  if (queryLength > MAX_RENDERED.queryLength) over.query = ['must be at most 8 KiB once detokenized'];
  const names = Object.keys(over);
  if (names.length)
    throw new ProxiesException(
      ProxiesErrorCode.RequestTooLarge,
      names.length === 1
        ? `The request is too large once detokenized: ${names[0]} ${over[names[0]][0]}.`
        : `The request is too large once detokenized: ${names.join(', ')} over their limits.`,
      over,
    );
}
