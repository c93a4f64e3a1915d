import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type {
  OperationObject,
  ParameterObject,
  ReferenceObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
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
  return documentDefaults(
    documentComponentSchemas(documentCommonResponses(documentIdempotency(documentAnyMethodRoutes(document)))),
  );
}

/**
 * Schemas a class cannot describe (a recursive union, say) are given by the operation that uses them,
 * with `@ApiExtension(COMPONENT_SCHEMAS_EXTENSION, { Name: schema, ... })`, and referenced as
 * `#/components/schemas/Name`; they are moved to `components.schemas` here.
 */
export const COMPONENT_SCHEMAS_EXTENSION = 'x-component-schemas';

function documentComponentSchemas(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item) as (OperationObject & Record<string, unknown>)[]) {
      const schemas = operation?.[COMPONENT_SCHEMAS_EXTENSION] as Record<string, SchemaObject> | undefined;
      if (!schemas) continue;
      delete operation[COMPONENT_SCHEMAS_EXTENSION];
      document.components ??= {};
      document.components.schemas = { ...document.components.schemas, ...schemas };
    }
  }
  return document;
}

/**
 * A value with a default may be left out, so it is never required: the swagger plugin marks a DTO property
 * required when it has no `?`, even with an initializer (`page: number = 1`), and a parameter likewise.
 *
 * In `components.schemas`, `default` itself becomes the property's `example` and a sentence of its
 * description: openapi-typescript (with its default options) types a property that has a `default`
 * in a component schema as always present, which is true of a response but not of a request, and a
 * request body's schema is a component too. Request parameters keep their `default` (it types them
 * correctly).
 */
function documentDefaults(document: OpenAPIObject): OpenAPIObject {
  const visit = (schema: SchemaObject | ReferenceObject | undefined, component: boolean): void => {
    if (!schema || '$ref' in schema) return;
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      if ('$ref' in property) continue;
      if (property.default !== undefined) {
        schema.required = schema.required?.filter((required) => required !== name);
        if (!schema.required?.length) delete schema.required;
        if (component) {
          const value =
            typeof property.default === 'string' ? property.default : JSON.stringify(property.default);
          if (!/\bdefault\b/i.test(property.description ?? ''))
            property.description = `${property.description ? `${property.description} ` : ''}Default: \`${value}\`.`;
          property.example ??= property.default;
          delete property.default;
        }
      }
      visit(property, component);
    }
    for (const key of ['items', 'additionalProperties'] as const)
      if (typeof schema[key] === 'object') visit(schema[key], component);
    for (const key of ['allOf', 'oneOf', 'anyOf'] as const)
      for (const member of schema[key] ?? []) visit(member, component);
  };
  for (const schema of Object.values(document.components?.schemas ?? {})) visit(schema, true);
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item) as OperationObject[]) {
      if (typeof operation !== 'object' || !operation || !('responses' in operation)) continue;
      for (const parameter of (operation.parameters ?? []) as ParameterObject[]) {
        const schema = parameter.schema as SchemaObject | undefined;
        if (schema && schema.default !== undefined && parameter.in !== 'path') parameter.required = false;
      }
      for (const content of Object.values(
        (operation.requestBody as { content?: Record<string, { schema?: SchemaObject }> } | undefined)
          ?.content ?? {},
      ))
        visit(content.schema, false);
    }
  }
  return document;
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

/** Where the document is served (without a key); the Swagger UI at /docs loads it from there. */
export const OPENAPI_JSON_URL = '/openapi.json';

/**
 * What the Swagger UI's init script embeds as the document: nothing. The swagger module writes the
 * document it is given into /docs/swagger-ui-init.js with String.prototype.replace, where `$&`, `` $` ``,
 * `$'` and `$1` in any description are replacement patterns, so the script stops parsing (a blank page).
 * An empty document makes the UI fetch `swaggerUrl` instead, so no text of the document is ever in the
 * script.
 */
const LOADED_BY_URL = {} as OpenAPIObject;

/** Swagger UI at /docs and the document at /openapi.json, both without a key. */
export function setupOpenApi(app: INestApplication): OpenAPIObject {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('openapi', app, document, {
    ui: false,
    raw: ['json'],
    jsonDocumentUrl: OPENAPI_JSON_URL,
  });
  SwaggerModule.setup('docs', app, LOADED_BY_URL, {
    raw: false,
    swaggerUrl: OPENAPI_JSON_URL,
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
