import { ApiDocs } from '../../../common/api-docs.decorator';
import {
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
} from '@nestjs/swagger';
import { ACTIONS } from './flow-conditions';
import { FlowRuleDto } from './flow-rule.dto';

/**
 * The OpenAPI description of the routing rules routes, one decorator per route, so that the controller
 * reads as routing only.
 */

const ActionParam = () =>
  ApiParam({ name: 'action', enum: ACTIONS, description: 'Which connections to try, or decline early' });

/** The request and answer of each route, by the controller's method name. */
export const FlowRulesApi = {
  list: () =>
    ApiDocs(
      ActionParam(),
      ApiOperation({
        operationId: 'listFlowRules',
        summary: 'List the rules of an action, in position order (a plain array)',
      }),
      ApiOkResponse({ type: [FlowRuleDto] }),
    ),
  create: () =>
    ApiDocs(
      ActionParam(),
      ApiOperation({
        operationId: 'createFlowRule',
        summary: 'Create a rule',
        description:
          'Without `position` the rule goes last; with `position` p it is inserted there and the rules from p on move ' +
          'down one. At most 100 rules per action.',
      }),
      ApiCreatedResponse({ type: FlowRuleDto }),
    ),
  get: () =>
    ApiDocs(
      ActionParam(),
      ApiOperation({ operationId: 'getFlowRule', summary: 'Get a rule' }),
      ApiOkResponse({ type: FlowRuleDto }),
    ),
  update: () =>
    ApiDocs(
      ActionParam(),
      ApiOperation({
        operationId: 'updateFlowRule',
        summary: 'Replace a rule, and move it',
        description: '`position` is required: moving a rule renumbers the others, in one step.',
      }),
      ApiOkResponse({ type: FlowRuleDto }),
    ),
  delete: () =>
    ApiDocs(
      ActionParam(),
      ApiOperation({
        operationId: 'deleteFlowRule',
        summary: 'Delete a rule (the rules after it move up one)',
      }),
      ApiNoContentResponse(),
    ),
};
