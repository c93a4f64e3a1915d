import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { OperationObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { API_KEY_SECURITY } from './auth/require-permissions.decorator';
import { NEVER_REPLAYED_EXTENSION } from './context/never-replayed.decorator';
import { ProblemDetailsDto } from './errors/problem-details.dto';

export const OPENAPI_INFO = {
  title: 'Token Vault and Payment Orchestration API',
  description:
    'Tokenize sensitive values, use tokens through sessions, read the audit log, and pay through 18 payment vendors ' +
    'without handling card data. Authenticate every call with the `BT-API-KEY` header.',
  version: '0.1.0',
};

/** The OpenAPI document of the running application (the same one committed as openapi.json). */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle(OPENAPI_INFO.title)
    .setDescription(OPENAPI_INFO.description)
    .setVersion(OPENAPI_INFO.version)
    .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
    .addServer('/', 'This server')
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'BT-API-KEY', description: 'An application or session key' },
      API_KEY_SECURITY,
    )
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    extraModels: [ProblemDetailsDto],
    operationIdFactory: (_controller, method) => method,
  });
  return documentCommonResponses(documentIdempotency(documentAnyMethodRoutes(document)));
}

/**
 * A route marked `@ApiExtension(ANY_METHOD_EXTENSION, '<name>')` takes every method (`@All`). The
 * swagger module documents it under eight methods with one operationId per method, the same on each
 * of its paths, and with `search`, which OpenAPI 3.0 lacks. Here it keeps the five methods clients
 * use, each with an operationId of its own: `<name>Get`, `<name>Post`, ... and `<name>GetPath`, ... on
 * a path with a parameter.
 */
export const ANY_METHOD_EXTENSION = 'x-any-method';

function documentAnyMethodRoutes(document: OpenAPIObject): OpenAPIObject {
  const kept = ['get', 'post', 'put', 'patch', 'delete'];
  for (const [path, item] of Object.entries(document.paths)) {
    const methods = Object.keys(item) as (keyof typeof item)[];
    for (const method of methods) {
      const operation = item[method] as (OperationObject & Record<string, unknown>) | undefined;
      const name = operation?.[ANY_METHOD_EXTENSION];
      if (typeof name !== 'string') continue;
      if (!kept.includes(method)) {
        delete item[method];
        continue;
      }
      delete operation![ANY_METHOD_EXTENSION];
      const verb = method.charAt(0).toUpperCase() + method.slice(1);
      const parameter = /\{([^}]+)\}/.exec(path)?.[1];
      operation!.operationId = `${name}${verb}${parameter ? 'Path' : ''}`;
      // The route's wildcard (`*path`) is not a declared parameter; the document must declare it.
      if (parameter && !(operation!.parameters ?? []).some((p) => 'name' in p && p.name === parameter))
        operation!.parameters = [
          {
            name: parameter,
            in: 'path',
            required: true,
            description: 'The rest of the path, appended to the destination (it may hold further slashes).',
            schema: { type: 'string' },
          },
          ...(operation!.parameters ?? []),
        ];
    }
  }
  return document;
}

const problem = {
  'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemDetailsDto' } },
};

/**
 * Every authenticated POST, PUT and PATCH accepts `BT-IDEMPOTENCY-KEY` (the interceptor applies to all of
 * them but those marked `@NeverReplayed`), so the header and its 409 and 422 answers are added here
 * rather than on each route.
 */
function documentIdempotency(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const method of ['post', 'put', 'patch'] as const) {
      const operation = item[method] as (OperationObject & Record<string, unknown>) | undefined;
      if (!operation?.security?.length) continue;
      if (operation[NEVER_REPLAYED_EXTENSION]) {
        delete operation[NEVER_REPLAYED_EXTENSION];
        continue;
      }
      operation.parameters = [
        ...(operation.parameters ?? []),
        {
          name: 'BT-IDEMPOTENCY-KEY',
          in: 'header',
          required: false,
          description:
            'Makes the request safe to retry for 24 hours: a retry with the same key and request gets the stored ' +
            'response with `BT-IDEMPOTENCY-REPLAYED: true`. 1 to 255 printable ASCII characters; a UUID is recommended.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      ];
      operation.responses['409'] ??= {
        description: 'A request with this idempotency key is still being processed (see Retry-After).',
        content: problem,
      };
      operation.responses['422'] ??= {
        description: 'The idempotency key was used with a different request.',
        content: problem,
      };
    }
  }
  return document;
}

/** Swagger UI at /docs and the document at /openapi.json, both without a key. */
export function setupOpenApi(app: INestApplication): OpenAPIObject {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: undefined,
    customSiteTitle: OPENAPI_INFO.title,
    swaggerOptions: { persistAuthorization: true },
  });
  return document;
}

const errorResponse = (description: string) => ({ description, content: problem });

/**
 * Responses every route can give, added where a route does not describe them itself: 400 for routes
 * that take input, 404 for routes addressing one resource, 500 everywhere; public routes say that they
 * need no key (`security: []`).
 */
function documentCommonResponses(document: OpenAPIObject): OpenAPIObject {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete'] as const) {
      const operation = item[method];
      if (!operation) continue;
      operation.security ??= [];
      const takesInput =
        Boolean(operation.requestBody) ||
        (operation.parameters ?? []).some((p) => 'in' in p && p.in !== 'header');
      if (takesInput)
        operation.responses['400'] ??= errorResponse('Invalid input: `errors` names each bad field.');
      if (/\{[^}]+\}/.test(path))
        operation.responses['404'] ??= errorResponse('No such resource in your tenant.');
      if (operation.security.length)
        operation.responses['429'] ??= errorResponse(
          'Too many requests for this API key this minute (RATE_LIMIT_PER_MINUTE), or too many failed ' +
            'authentications from this client address (AUTH_FAILURES_PER_MINUTE); see Retry-After.',
        );
      operation.responses['500'] ??= errorResponse('Unexpected error; the body says nothing of internals.');
    }
  }
  return document;
}
