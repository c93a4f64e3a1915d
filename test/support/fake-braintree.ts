import { readFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  buildSchema,
  execute,
  GraphQLError,
  GraphQLSchema,
  Kind,
  NoDeprecatedCustomRule,
  parse,
  specifiedRules,
  validate,
} from 'graphql';
import { FakeBraintreeLedger } from './fake-braintree-ledger';

export { BRAINTREE_CARDS } from './fake-braintree-ledger';
export type { FakeBraintreeTransaction } from './fake-braintree-ledger';

/**
 * A fake Braintree GraphQL API (`POST /graphql`): Braintree's published schema
 * (test/vendor-specs/braintree-graphql.graphql) executed by graphql-js, so that every document and every
 * variable the braintree-card adapter sends is parsed, validated (deprecated fields refused too) and
 * coerced as Braintree's server would; a request that fails is answered with GraphQL errors and kept in
 * `invalid` (the suites assert it stays empty). `Authorization: Basic base64(public:private)` must name a
 * known key pair (else HTTP 401, errorClass AUTHENTICATION) and `Braintree-Version` a date from
 * 2019-01-01 on (else HTTP 400, UNSUPPORTED_CLIENT).
 *
 * Behaviour (after Braintree's sandbox testing guide; amounts in the merchant account's currency):
 *
 * | what | outcome |
 * |---|---|
 * | amount 0.01 to 1999.99 | AUTHORIZED (authorize) or SUBMITTED_FOR_SETTLEMENT (charge), AuthorizedEvent legacy code 1000 |
 * | amount 2000.00 to 2999.99 | PROCESSOR_DECLINED, legacy code = the amount's whole part (2001 Insufficient Funds ...) |
 * | amount 3000.00 to 3000.99 | FAILED, legacy code 3000 (Processor Network Unavailable) |
 * | amount 5001.00 / .01 / .02 / .03 (the fake's choice) | GATEWAY_REJECTED: APPLICATION_INCOMPLETE, RISK_THRESHOLD, FRAUD, CVV |
 * | card 4000111111111115 | PROCESSOR_DECLINED 2000 (Do Not Honor) at any amount |
 * | a number failing the Luhn check | tokenizeCreditCard refused: VALIDATION, legacy code 81715 |
 * | CVV 200 / 201 / 301 | cvvResponse DOES_NOT_MATCH / NOT_VERIFIED / ISSUER_DOES_NOT_PARTICIPATE (else MATCHES) |
 * | a single-use payment method used twice | VALIDATION 91564 |
 * | capture of a non-AUTHORIZED transaction / above the amount | VALIDATION 91507 / 91522 |
 * | reverseTransaction | AUTHORIZED or SUBMITTED_FOR_SETTLEMENT: VOIDED; SETTLED: a Refund of what is left |
 * | refundTransaction before settlement / above what is left | VALIDATION 91506 / 91521 |
 *
 * `settle(id)` is Braintree's settlement batch for one transaction. Faults, each for the next request
 * whose operation name matches `faultOn` (default: any): `rateLimitNext` (429, nothing done),
 * `failNext` (500, nothing done), `failAfterNext` (done, then 500), `hangNext` (done, never answered).
 */

const SCHEMA_PATH = join(__dirname, '../vendor-specs/braintree-graphql.graphql');
let schemaCache: GraphQLSchema | undefined;
const braintreeSchema = (): GraphQLSchema => (schemaCache ??= buildSchema(readFileSync(SCHEMA_PATH, 'utf8')));

/** One request the fake received. */
export interface BraintreeRequest {
  operationName: string | null;
  query: string;
  variables: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Record<string, string | string[] | undefined>;
}

export class FakeBraintree {
  readonly ledger = new FakeBraintreeLedger();
  readonly requests: BraintreeRequest[] = [];
  /** Requests whose document or variables the schema refused (with the errors). */
  readonly invalid: { operationName: string | null; errors: string[] }[] = [];
  /** Key pairs the fake accepts: public key to private key. */
  readonly keys = new Map<string, string>([['bt_public_test', 'bt_private_test']]);
  faultOn: RegExp = /./;
  rateLimitNext = 0;
  failNext = 0;
  failAfterNext = 0;
  hangNext = 0;
  /** Runs after an operation was performed and before its answer is sent (a crash test kills the server here). */
  beforeAnswer?: (operationName: string | null) => Promise<void> | void;
  private server!: Server;

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get transactions() {
    return this.ledger.transactions;
  }

  /** Listens on `port` (0: any free one); after close(), start(port) brings the same fake back there. */
  async start(port = 0): Promise<this> {
    braintreeSchema();
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The requests of one operation (by its name), in order. */
  calls(operationName: string): BraintreeRequest[] {
    return this.requests.filter((r) => r.operationName === operationName);
  }

  settle(id: string): void {
    this.ledger.settle(id);
  }

  private takeFault(operationName: string | null): 'rate' | 'fail' | 'failAfter' | 'hang' | null {
    if (!this.faultOn.test(operationName ?? '')) return null;
    if (this.rateLimitNext > 0) return (this.rateLimitNext--, 'rate');
    if (this.failNext > 0) return (this.failNext--, 'fail');
    if (this.failAfterNext > 0) return (this.failAfterNext--, 'failAfter');
    if (this.hangNext > 0) return (this.hangNext--, 'hang');
    return null;
  }

  private authenticated(header: string | undefined): boolean {
    const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header ?? '');
    if (!match) return false;
    const pair = Buffer.from(match[1], 'base64').toString('utf8');
    const at = pair.indexOf(':');
    return at > 0 && this.keys.get(pair.slice(0, at)) === pair.slice(at + 1);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const problem = (status: number, errorClass: string, message: string) =>
      send(status, { errors: [{ message, extensions: { errorClass } }] });
    if (req.method !== 'POST' || req.url !== '/graphql') return problem(404, 'NOT_FOUND', 'Not found');
    let body: { query?: unknown; variables?: unknown; operationName?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
    } catch {
      return problem(400, 'VALIDATION', 'The request body is not JSON');
    }
    const query = typeof body.query === 'string' ? body.query : '';
    const variables = (body.variables ?? {}) as BraintreeRequest['variables'];
    let document;
    try {
      document = parse(query);
    } catch (error) {
      this.invalid.push({ operationName: null, errors: [(error as Error).message] });
      return send(200, {
        errors: [{ message: (error as Error).message, extensions: { errorClass: 'VALIDATION' } }],
      });
    }
    const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
    const operationName = operation && 'name' in operation ? (operation.name?.value ?? null) : null;
    this.requests.push({ operationName, query, variables, headers: req.headers });
    if (!this.authenticated(req.headers.authorization))
      return problem(401, 'AUTHENTICATION', 'Authentication credentials are invalid');
    const version = String(req.headers['braintree-version'] ?? '');
    if (!/^\d{4}-\d{2}-\d{2}$/.test(version) || version < '2019-01-01')
      return problem(400, 'UNSUPPORTED_CLIENT', 'Braintree-Version is missing or unsupported');
    const fault = this.takeFault(operationName);
    if (fault === 'rate') return problem(429, 'RESOURCE_LIMIT', 'Too many requests');
    if (fault === 'fail') return problem(500, 'INTERNAL', 'Internal error');
    const schema = braintreeSchema();
    const errors = validate(schema, document, [...specifiedRules, NoDeprecatedCustomRule]);
    if (errors.length > 0) {
      this.invalid.push({ operationName, errors: errors.map((e) => e.message) });
      return send(200, {
        errors: errors.map((e) => ({ message: e.message, extensions: { errorClass: 'VALIDATION' } })),
      });
    }
    const result = await execute({
      schema,
      document,
      rootValue: this.ledger.root,
      variableValues: variables,
    });
    // Variables the schema could not coerce: a request error (no data at all).
    if (result.errors && result.data === undefined)
      this.invalid.push({ operationName, errors: result.errors.map((e) => e.message) });
    if (this.beforeAnswer) await this.beforeAnswer(operationName);
    if (fault === 'failAfter') return problem(500, 'INTERNAL', 'Internal error');
    if (fault === 'hang') return; // done, never answered
    send(200, {
      ...(result.data !== undefined ? { data: result.data } : {}),
      ...(result.errors ? { errors: result.errors.map(formatError) } : {}),
      extensions: { requestId: `fake-${Date.now()}` },
    });
  }
}

/** A resolver's refusal as Braintree shows it: the message, the path and the extensions (errorClass, legacyCode). */
function formatError(error: GraphQLError): Record<string, unknown> {
  return {
    message: error.message,
    ...(error.path ? { path: error.path } : {}),
    extensions: { errorClass: 'INTERNAL', ...error.extensions },
  };
}
