import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiConsumes, ApiCreatedResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { ProxyDto, ProxyPageDto } from './proxy.dto';

/**
 * The OpenAPI description of the pre-configured proxies routes, one decorator per route, so that the controller
 * reads as routing only.
 */

const POLICY =
  '`destination_url` must pass the outbound policy (http or https; a public address unless listed in ' +
  'OUTBOUND_ALLOWED_HOSTS), else 400.';

/** The request and answer of each route, by the controller's method name. */
export const ProxiesApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createProxy',
        summary: 'Create a pre-configured proxy',
        description: POLICY,
      }),
      ApiCreatedResponse({ type: ProxyDto }),
    ),
  list: () =>
    ApiDocs(
      ApiOperation({ operationId: 'listProxies', summary: 'List pre-configured proxies' }),
      ApiOkResponse({ type: ProxyPageDto }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getProxy', summary: 'Get a pre-configured proxy' }),
      ApiOkResponse({ type: ProxyDto }),
    ),
  update: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'updateProxy',
        summary: 'Replace a pre-configured proxy',
        description: `\`require_auth\` omitted is true. ${POLICY}`,
      }),
      ApiOkResponse({ type: ProxyDto }),
    ),
  patch: () =>
    ApiDocs(
      ApiConsumes('application/merge-patch+json', 'application/json'),
      ApiOperation({
        operationId: 'patchProxy',
        summary: 'Change some fields of a pre-configured proxy',
        description: `204 without a body, as Basis Theory answers it. ${POLICY}`,
      }),
    ),
  delete: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'deleteProxy',
        summary: 'Delete a pre-configured proxy',
        description: 'Requests naming its key are refused (404) from then on.',
      }),
    ),
};
