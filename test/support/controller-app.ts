import 'reflect-metadata';
import type { INestApplication, Provider, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { PinoLogger } from 'nestjs-pino';
import { randomBytes } from 'node:crypto';
import { BASE62, KEY_KINDS, type KeyKind } from '../../src/common/auth/api-key';
import { ApiKeyAuthenticator, ApiKeyGuard } from '../../src/common/auth/api-key.guard';
import type { ApplicationType } from '../../src/common/auth/permissions';
import { PermissionsGuard } from '../../src/common/auth/permissions.guard';
import type { Principal } from '../../src/common/auth/principal';
import { PrincipalResolvers } from '../../src/common/auth/principal-resolver';
import { jsonBodyParser, rawBodyParser, requireJsonContentType } from '../../src/common/context/body-parser';
import { traceIdMiddleware } from '../../src/common/context/trace-id';
import { ProblemDetailsFilter } from '../../src/common/errors/problem-details.filter';
import { createValidationPipe } from '../../src/common/errors/validation';
import { Clock } from '../../src/common/jobs/clock';
import type { RequestOrigin } from '../../src/common/unit-of-work/origin.decorator';
import { AppConfig } from '../../src/config/app-config';
import { inMemoryRequest } from './in-memory-http';

/**
 * A controller in a small Nest application, without a database: the real authentication and
 * authorization guards (with keys resolved from memory), the real body parsing, validation pipe and
 * problem+json filter, and the controller's services replaced by the fakes given. The audit and
 * idempotency interceptors are left out: they need the database, and the e2e tests cover them.
 */
export interface ControllerApp {
  app: INestApplication;
  /** supertest on the application's server, in memory (test/support/in-memory-http.ts). */
  http: ReturnType<typeof inMemoryRequest>;
  /** A fresh well-formed key of this kind whose principal holds these permissions. */
  key(kind: KeyKind, permissions?: string[], options?: { authorized?: boolean }): string;
  /** Who a key made by `key` is: the principal and the origin its requests hand a service. */
  caller(key: string): Caller;
  close(): Promise<void>;
}

/**
 * Who a request comes from, as the controller hands it to its service: `who` for a read
 * (`@Principal()`), `origin` for a write (`@Origin()`: the principal as actor, and the client's address,
 * the in-memory socket's).
 */
export interface Caller {
  who: Principal;
  origin: RequestOrigin;
}

/** The address every in-memory request comes from (test/support/in-memory-http.ts). */
const CLIENT = '127.0.0.1';

const APPLICATION_TYPE: Record<KeyKind, ApplicationType> = {
  public: 'public',
  private: 'private',
  management: 'management',
  session: 'public',
};

/** A service replaced by an object of jest.fn()s; each resolves to `undefined` unless told otherwise. */
export function fakeOf<T>(methods: (keyof T & string)[]): Record<keyof T & string, jest.Mock> {
  const fake = {} as Record<keyof T & string, jest.Mock>;
  for (const method of methods) fake[method] = jest.fn().mockResolvedValue(undefined);
  return fake;
}

export async function controllerApp(
  controllers: Type<unknown>[],
  providers: Provider[] = [],
): Promise<ControllerApp> {
  const principals = new Map<string, Principal>();
  const quiet = { setContext: () => undefined, error: () => undefined, warn: () => undefined };
  const moduleRef = await Test.createTestingModule({
    controllers,
    providers: [
      PrincipalResolvers,
      ApiKeyAuthenticator,
      { provide: APP_GUARD, useClass: ApiKeyGuard },
      { provide: APP_GUARD, useClass: PermissionsGuard },
      { provide: APP_FILTER, useClass: ProblemDetailsFilter },
      { provide: PinoLogger, useValue: quiet },
      Clock,
      // Every request of a spec comes from the same address: no limit of failed authentications.
      { provide: AppConfig, useValue: { AUTH_FAILURES_PER_MINUTE: 1_000_000 } },
      ...providers,
    ],
  }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: false });
  // The request pipeline of configureApp (src/app.setup.ts) that matters to a controller, in its order.
  app.use(traceIdMiddleware);
  app.use('/proxy', rawBodyParser({ 'BT-PROXY-ERROR': 'true' }));
  app.use('/orchestration/notifications/checkout', rawBodyParser());
  app.use(requireJsonContentType(/^\/(proxy(\/|$)|orchestration\/approvals\/)/));
  app.use(jsonBodyParser());
  app.useGlobalPipes(createValidationPipe());
  app.get(PrincipalResolvers).register(Object.keys(KEY_KINDS) as KeyKind[], {
    resolve: (key) => Promise.resolve(principals.get(key)),
  });
  await app.init();
  let n = 0;
  return {
    app,
    http: inMemoryRequest(app.getHttpServer()),
    key(kind, permissions = [], options = {}) {
      const key = `key_${KEY_KINDS[kind]}_${BASE62.encode(randomBytes(32))}`;
      n += 1;
      principals.set(key, {
        tenantId: '00000000-0000-4000-8000-000000000001',
        applicationId: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
        applicationType: APPLICATION_TYPE[kind],
        keyKind: kind,
        keyId: `00000000-0000-4000-9000-${String(n).padStart(12, '0')}`,
        ...(kind === 'session'
          ? { sessionId: `00000000-0000-4000-a000-${String(n).padStart(12, '0')}` }
          : {}),
        authorized: options.authorized ?? true,
        permissions,
        rules: [],
      });
      return key;
    },
    caller(key) {
      const who = principals.get(key);
      if (!who) throw new Error('caller: a key that ctx.key did not make');
      return { who, origin: { actor: who, client: CLIENT } };
    },
    close: () => app.close(),
  };
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** One route of a controller, as its spec checks it. */
export interface RouteCase {
  method: Method;
  path: string;
  /** What the route needs: none listed, any valid key of an allowed kind. */
  permissions?: string[];
  /** The key kind a valid request uses (default private); `keyKinds` of the route, when it restricts them. */
  kind?: KeyKind;
  keyKinds?: KeyKind[];
  /** A valid body (sent as JSON) or query. */
  body?: unknown;
  query?: Record<string, string>;
  /** A bad input and the field the problem must name. */
  invalid?: { body?: unknown; query?: Record<string, string>; field: string };
  /** The service fake the valid request must reach. */
  reaches: () => jest.Mock;
  /**
   * The arguments the valid request must hand the service, exactly (compared as `toEqual` compares: a DTO
   * instance equals the plain object of its fields), given who sent it. Required: that the service was
   * reached says nothing of whether it was told the right tenant, ids and values.
   */
  calledWith: (caller: Caller) => unknown[];
  /** What the fake answers (default: undefined). */
  answer?: unknown;
  /** The status of the valid request's answer (default: 201 for a POST, 204 for a DELETE, else 200). */
  status?: number;
  /** The body the valid request is answered (default: `answer`, when it is not undefined). */
  responds?: unknown;
}

const DEFAULT_STATUS: Record<Method, number> = { get: 200, post: 201, put: 200, patch: 200, delete: 204 };

const UUID = '11111111-1111-4111-8111-111111111111';
/** A path id that is well formed (a uuid). */
export const ID = UUID;

function send(
  ctx: ControllerApp,
  route: RouteCase,
  key?: string,
  input?: { body?: unknown; query?: Record<string, string> },
) {
  let req = ctx.http[route.method](route.path);
  if (key) req = req.set('BT-API-KEY', key);
  const query = input ? input.query : route.query;
  if (query) req = req.query(query);
  const body = input ? input.body : route.body;
  return body === undefined ? req : req.send(body as object);
}

/**
 * The checks every authenticated route gets: 401 without a key and with an unknown one, 403 without its
 * permission (and with a key of a kind it refuses), 400 problem+json naming the bad field, and a valid
 * request that hands the service what it should (`calledWith`: the caller, the parsed values, the ids)
 * once, and is answered with the route's status and the service's answer.
 */
export function describeRoutes(getApp: () => ControllerApp, routes: RouteCase[]): void {
  afterEach(() => jest.clearAllMocks());
  for (const route of routes) {
    describe(`${route.method.toUpperCase()} ${route.path}`, () => {
      const kind = route.kind ?? 'private';
      const permissions = route.permissions ?? [];

      it('is 401 without a key, and with a key nobody holds', async () => {
        const ctx = getApp();
        const none = await send(ctx, route);
        expect(none.status).toBe(401);
        expect(none.headers['content-type']).toMatch(/^application\/problem\+json/);
        const unknown = await send(ctx, route, `key_${KEY_KINDS[kind]}_${'x'.repeat(43)}`);
        expect(unknown.status).toBe(401);
        expect(route.reaches()).not.toHaveBeenCalled();
      });

      if (permissions.length)
        it(`is 403 without ${permissions.join(', ')}`, async () => {
          const ctx = getApp();
          for (const missing of permissions) {
            const res = await send(
              ctx,
              route,
              ctx.key(
                kind,
                permissions.filter((p) => p !== missing),
              ),
            );
            expect(res.status).toBe(403);
            expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
            expect(res.body.detail).toContain(missing);
          }
          expect(route.reaches()).not.toHaveBeenCalled();
        });

      if (route.keyKinds)
        it(`is 403 with a key that is not ${route.keyKinds.join(' or ')}`, async () => {
          const ctx = getApp();
          const others = (Object.keys(KEY_KINDS) as KeyKind[]).filter((k) => !route.keyKinds!.includes(k));
          for (const other of others) {
            const res = await send(ctx, route, ctx.key(other, permissions));
            expect(res.status).toBe(403);
            expect(res.body.detail).toContain(`the key given is a ${other} key`);
          }
          expect(route.reaches()).not.toHaveBeenCalled();
        });

      if (route.invalid) {
        const invalid = route.invalid;
        it(`is 400 problem+json naming ${invalid.field} for a bad input`, async () => {
          const ctx = getApp();
          const res = await send(ctx, route, ctx.key(kind, permissions), {
            body: invalid.body ?? (invalid.query ? route.body : undefined),
            query: invalid.query ?? (invalid.body !== undefined ? route.query : undefined),
          });
          expect([400, 422]).toContain(res.status);
          expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(Object.keys(res.body.errors ?? {})).toContain(invalid.field);
          expect(route.reaches()).not.toHaveBeenCalled();
        });
      }

      it(`hands the service the request's values, and answers ${route.status ?? DEFAULT_STATUS[route.method]}`, async () => {
        const ctx = getApp();
        if (route.answer !== undefined) route.reaches().mockResolvedValueOnce(route.answer);
        const key = ctx.key(kind, permissions);
        const res = await send(ctx, route, key);
        expect(res.status).toBe(route.status ?? DEFAULT_STATUS[route.method]);
        expect(route.reaches()).toHaveBeenCalledTimes(1);
        expect(route.reaches()).toHaveBeenCalledWith(...route.calledWith(ctx.caller(key)));
        const responds = route.responds ?? route.answer;
        if (responds !== undefined) expect(res.body).toEqual(responds);
      });
    });
  }
}
