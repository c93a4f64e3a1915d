import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiConflictResponse, ApiCreatedResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { problemContent } from '../../../common/errors/problem-details.dto';
import { ApiKeyDto, ApplicationDto, ApplicationPageDto } from './application.dto';

/**
 * The OpenAPI description of the applications routes, one decorator per route, so that the controller
 * reads as routing only.
 */

const GRANTS =
  'The caller must hold every management permission it grants, and every management permission the ' +
  'application it acts on holds (else 403).';

const NOT_REPLAYED =
  'BT-IDEMPOTENCY-KEY is ignored here: every call makes a new key, so that no other holder of a key of ' +
  'the calling application is ever sent it, and no idempotency record keeps it.';

const LastAdministrator = (what: string) =>
  ApiConflictResponse({
    description: `${what} would leave the tenant without an application holding application:create and application:update (with a key).`,
    content: problemContent(),
  });

/** The request and answer of each route, by the controller's method name. */
export const ApplicationsApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createApplication',
        summary: 'Create an application',
        description: `The response holds the new key in clear; it is never shown again. ${NOT_REPLAYED} ${GRANTS}`,
      }),
      ApiCreatedResponse({ type: ApplicationDto }),
    ),
  list: () =>
    ApiDocs(
      ApiOperation({ operationId: 'listApplications', summary: 'List applications' }),
      ApiOkResponse({ type: ApplicationPageDto }),
    ),
  getByKey: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getApplicationByKey', summary: 'Get the application of the calling key' }),
      ApiOkResponse({ type: ApplicationDto }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getApplication', summary: 'Get an application' }),
      ApiOkResponse({ type: ApplicationDto }),
    ),
  update: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'updateApplication',
        summary: 'Update an application',
        description: GRANTS,
      }),
      ApiOkResponse({ type: ApplicationDto }),
      LastAdministrator(
        'Removing application:create or application:update from the last application holding them',
      ),
    ),
  delete: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'deleteApplication',
        summary: 'Delete an application',
        description: `Its keys stop working at once, and so do the sessions it authorized. ${GRANTS}`,
      }),
      LastAdministrator('Deleting it'),
    ),
  listKeys: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listApplicationKeys',
        summary: "List an application's keys (never in clear)",
      }),
      ApiOkResponse({ type: ApiKeyDto, isArray: true }),
    ),
  getKey: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'getApplicationKey',
        summary: "Get one of an application's keys (never in clear)",
      }),
      ApiOkResponse({ type: ApiKeyDto }),
    ),
  createKey: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createApplicationKey',
        summary: 'Create a key (rotation)',
        description: `The response holds the new key in clear; it is never shown again. Old keys keep working until deleted. ${NOT_REPLAYED} ${GRANTS}`,
      }),
      ApiCreatedResponse({ type: ApiKeyDto }),
    ),
  deleteKey: () =>
    ApiDocs(
      ApiOperation({ operationId: 'deleteApplicationKey', summary: 'Revoke a key', description: GRANTS }),
      LastAdministrator('Deleting the last key of the last application holding them'),
    ),
};
