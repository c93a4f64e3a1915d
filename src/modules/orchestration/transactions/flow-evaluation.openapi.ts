import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { FlowEvaluationDto } from '../flows/flow-rule.dto';

/**
 * The OpenAPI description of the routing dry run routes, one decorator per route, so that the controller
 * reads as routing only.
 */

/** The request and answer of each route, by the controller's method name. */
export const FlowEvaluationApi = {
  evaluate: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'evaluateFlow',
        summary: 'Which connections a transaction would be tried on (a dry run)',
        description:
          'Takes a transaction create body without `connection_id`. The token needs `token:use`, checked through ' +
          "the caller's rules as a transaction create checks it (its scheme and first 6 digits decide): a key " +
          'without it is refused as a create is. Creates nothing and calls no vendor.',
      }),
      ApiOkResponse({ type: FlowEvaluationDto }),
    ),
};
