import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { API_KEY_SECURITY } from './auth/require-permissions.decorator';
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
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'BT-API-KEY', description: 'An application or session key' },
      API_KEY_SECURITY,
    )
    .build();
  return SwaggerModule.createDocument(app, config, {
    extraModels: [ProblemDetailsDto],
    operationIdFactory: (_controller, method) => method,
  });
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
