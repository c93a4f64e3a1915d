import { Inject, Injectable, OnModuleDestroy, Optional } from '@nestjs/common';
import { lookup as dnsLookup, LookupAddress, LookupOptions } from 'node:dns';
import { promisify } from 'node:util';
import { Agent, buildConnector } from 'undici';
import { AppConfig } from '../../config/app-config';
import { OutboundPolicy } from './outbound-policy';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  HOP_BY_HOP_HEADERS,
  OutboundError,
  OutboundRequest,
  OutboundResponse,
} from './outbound.types';

/** Resolves a host name to every address it has (the system resolver unless a test injects another). */
export type OutboundLookup = (hostname: string) => Promise<readonly LookupAddress[]>;

/** Injection token of the resolver; unbound in production, where the system resolver is used. */
export const OUTBOUND_LOOKUP = Symbol('OUTBOUND_LOOKUP');

const systemLookup: OutboundLookup = (hostname) =>
  promisify(dnsLookup)(hostname, { all: true, verbatim: true });

/** Never sent on: they describe our connection to the destination, which undici makes itself. */
const COMPUTED_REQUEST_HEADERS = new Set(['host', 'content-length', 'expect']);

type Headers = Record<string, string | string[]>;
type NetLookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

const refused = (): OutboundError =>
  new OutboundError(
    'destination_not_allowed',
    'the destination address is not allowed by the outbound policy',
  );

/**
 * Sends the HTTP requests whose destination a tenant chose (the proxy, webhooks), under the outbound
 * policy. The policy is enforced where the connection is made, not on the URL:
 * an IP-literal host is judged before connecting, a name's resolved addresses are filtered before
 * connecting (a name that resolves only to refused addresses gets no connection), and the address
 * actually connected is judged again before a byte of the request is written. So a name that
 * resolves to a public address when checked and to a private one when used (DNS rebinding) is
 * refused too.
 */
@Injectable()
export class OutboundHttp implements OnModuleDestroy {
  private readonly policy: OutboundPolicy;
  private readonly resolve: OutboundLookup;
  private readonly agent: Agent;

  constructor(
    private readonly config: AppConfig,
    @Optional() @Inject(OUTBOUND_LOOKUP) lookup?: OutboundLookup,
  ) {
    this.policy = OutboundPolicy.fromSetting(config.OUTBOUND_ALLOWED_HOSTS);
    this.resolve = lookup ?? systemLookup;
    const connect = buildConnector({ timeout: config.PROXY_TIMEOUT_MS, lookup: this.netLookup });
    this.agent = new Agent({ connect: guardedConnector(this.policy, connect) });
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent.destroy();
  }

  /**
   * For a destination configured ahead of use (a proxy's `destination_url`, a webhook's `url`): the URL
   * when it is an http(s) URL whose host passes the policy. A name is resolved and refused when every
   * address it has is refused; a name that does not resolve now is accepted (every connection is
   * checked again). Throws OutboundError 'invalid_url' or 'destination_not_allowed'.
   */
  async checkDestination(url: string): Promise<URL> {
    const parsed = this.policy.parseUrl(url);
    const verdict = this.policy.judgeHost(parsed.hostname);
    if (verdict === 'refused') throw refused();
    if (verdict === 'resolve') {
      let addresses: readonly LookupAddress[];
      try {
        addresses = await this.resolve(parsed.hostname);
      } catch {
        return parsed;
      }
      if (addresses.length > 0 && !addresses.some((a) => this.policy.allowsAddress(a.address))) {
        throw refused();
      }
    }
    return parsed;
  }

  /**
   * Sends one request and buffers the answer. Redirects are returned, never followed. Throws
   * OutboundError: 'invalid_url', 'invalid_request' (a method or header HTTP cannot carry),
   * 'destination_not_allowed', 'unreachable', 'timeout' (from connecting to the last body byte),
   * 'response_too_large'.
   */
  async send(request: OutboundRequest): Promise<OutboundResponse> {
    const url = this.policy.parseUrl(request.url);
    const timeoutMs = request.timeoutMs ?? this.config.PROXY_TIMEOUT_MS;
    const cap = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), timeoutMs);
    try {
      const response = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: forwardedHeaders(request.headers, COMPUTED_REQUEST_HEADERS),
        body: request.body,
        signal: deadline.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const declared = Number(response.headers['content-length']);
      if (declared > cap) {
        // Destroying undici's body errors it with an abort: expected here, so listened to.
        response.body.on('error', () => undefined).destroy();
        throw tooLarge(cap);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > cap) throw tooLarge(cap); // leaving the loop destroys the body and its connection
        chunks.push(chunk);
      }
      return {
        status: response.statusCode,
        headers: forwardedHeaders(response.headers as Headers),
        body: Buffer.concat(chunks, size),
      };
    } catch (error) {
      throw failure(error, deadline.signal.aborted, timeoutMs);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The `lookup` of net.connect: a listed name keeps every address, any other keeps the allowed ones
   * only; none left refuses the connection before it is attempted.
   */
  private readonly netLookup = (
    hostname: string,
    options: LookupOptions,
    callback: NetLookupCallback,
  ): void => {
    const listed = this.policy.allowsHost(hostname);
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    this.resolve(hostname).then(
      (addresses) => {
        const usable = addresses.filter((a) => family === 0 || a.family === family);
        const allowed = listed ? usable : usable.filter((a) => this.policy.allowsAddress(a.address));
        if (allowed.length === 0) {
          const error: NodeJS.ErrnoException =
            usable.length === 0 ? Object.assign(new Error('no address'), { code: 'ENOTFOUND' }) : refused();
          return callback(error, options.all === true ? [] : '');
        }
        if (options.all === true) callback(null, [...allowed]);
        else callback(null, allowed[0].address, allowed[0].family);
      },
      (error: NodeJS.ErrnoException) => callback(error, options.all === true ? [] : ''),
    );
  };
}

/**
 * undici's connector `connect`, guarded by the policy: an IP-literal host is judged before any
 * connection (net.connect does not look literals up, so the lookup never sees them); a name's
 * addresses are filtered by the lookup `connect` was built with; and the address actually connected
 * is judged again before the socket is handed over, so not a byte of a request reaches a refused one.
 */
export function guardedConnector(
  policy: OutboundPolicy,
  connect: buildConnector.connector,
): buildConnector.connector {
  return (options, callback) => {
    const verdict = policy.judgeHost(options.hostname);
    if (verdict === 'refused') return callback(refused(), null);
    connect(options, (error, socket) => {
      if (error !== null) return callback(error, null);
      const remote = socket.remoteAddress;
      if (verdict === 'resolve' && (remote === undefined || !policy.allowsAddress(remote))) {
        socket.destroy();
        return callback(refused(), null);
      }
      callback(null, socket);
    });
  };
}

const tooLarge = (cap: number): OutboundError =>
  new OutboundError('response_too_large', `the destination's answer is larger than ${cap} bytes`);

/**
 * The headers to pass on, names in lower case: hop-by-hop headers and those the `Connection` header
 * names are dropped, and `drop` besides. Values of one name in several spellings are gathered.
 */
function forwardedHeaders(headers: Headers, drop: ReadonlySet<string> = new Set()): Headers {
  const connectionScoped = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== 'connection') continue;
    for (const listed of [value].flat().join(',').split(',')) {
      connectionScoped.add(listed.trim().toLowerCase());
    }
  }
  const kept: Headers = {};
  for (const [raw, value] of Object.entries(headers)) {
    const name = raw.toLowerCase();
    if (HOP_BY_HOP_HEADERS.has(name) || connectionScoped.has(name) || drop.has(name)) continue;
    const previous = kept[name];
    kept[name] = previous === undefined ? value : [previous, value].flat();
  }
  return kept;
}

/** What went wrong, as one of the port's failures (the message names no address, path or body). */
function failure(error: unknown, timedOut: boolean, timeoutMs: number): unknown {
  if (error instanceof OutboundError) return error;
  const timeout = new OutboundError('timeout', `the destination did not answer within ${timeoutMs} ms`);
  if (timedOut) return timeout;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return error; // not a network failure: a bug, passed on as it is
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return timeout;
    case 'UND_ERR_INVALID_ARG':
    case 'UND_ERR_NOT_SUPPORTED':
      return new OutboundError('invalid_request', 'the request has a method or header HTTP cannot carry');
    default:
      return new OutboundError('unreachable', 'the destination could not be reached');
  }
}
