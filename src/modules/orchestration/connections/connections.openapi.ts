import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { ConnectionDto } from './connection.dto';

/**
 * The OpenAPI description of the connections routes, one decorator per route, so that the controller
 * reads as routing only.
 */

/** The request and answer of each route, by the controller's method name. */
export const ConnectionsApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createConnection',
        summary: 'Create a connection from a formula',
        description:
          'The connection starts `pending`; a verification with the vendor makes it `available` or `failed`, normally ' +
          'within a second. Secret field values are stored encrypted and shown as `********`.',
      }),
      ApiCreatedResponse({ type: ConnectionDto }),
    ),
  list: () =>
    ApiDocs(
      ApiOperation({ operationId: 'listConnections', summary: 'List connections (a plain array)' }),
      ApiOkResponse({ type: [ConnectionDto] }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getConnection', summary: 'Get a connection' }),
      ApiOkResponse({ type: ConnectionDto }),
    ),
  update: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'updateConnection',
        summary: 'Update a connection',
        description: 'The connection is verified again. A secret sent as `********` keeps its stored value.',
      }),
      ApiOkResponse({ type: ConnectionDto }),
    ),
  delete: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'deleteConnection',
        summary: 'Delete a connection',
        description: 'A connection with transactions is kept for them but no longer listed or usable.',
      }),
    ),
};
