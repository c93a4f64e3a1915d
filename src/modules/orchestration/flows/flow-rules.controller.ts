import { Body, Controller, Delete, Get, HttpCode, Param, PipeTransform, Post, Put } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import { Audited } from '../../../common/audit/audited.decorator';
import { Principal } from '../../../common/auth/principal';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { ACTIONS, FlowAction } from './flow-conditions';
import { FlowRuleDto, FlowRuleRequestDto } from './flow-rule.dto';
import { actionOf, FlowRulesService } from './flow-rules.service';

const RuleId = () => Param('id', new ParseIdPipe('Rule'));
/** The action in the path; any other is a 404, as for a route that does not exist. */
class ParseActionPipe implements PipeTransform<string, FlowAction> {
  transform(value: string): FlowAction {
    return actionOf(value);
  }
}
const Action = () => Param('action', new ParseActionPipe());
const ActionParam = () =>
  ApiParam({ name: 'action', enum: ACTIONS, description: 'Which connections to try, or decline early' });

@ApiTags('Orchestration')
@Controller('orchestration/flows/card-transaction')
export class FlowRulesController {
  constructor(private readonly rules: FlowRulesService) {}

  @Get('actions/:action/rules')
  @RequirePermissions('orchestration:flows:read')
  @Audited('flow_rule', 'read')
  @ActionParam()
  @ApiOperation({
    operationId: 'listFlowRules',
    summary: 'List the rules of an action, in position order (a plain array)',
  })
  @ApiOkResponse({ type: [FlowRuleDto] })
  list(@Principal() who: Principal, @Action() action: FlowAction): Promise<FlowRuleDto[]> {
    return this.rules.list(who, action);
  }

  @Post('actions/:action/rules')
  @RequirePermissions('orchestration:flows:update')
  @ActionParam()
  @ApiOperation({
    operationId: 'createFlowRule',
    summary: 'Create a rule',
    description:
      'Without `position` the rule goes last; with `position` p it is inserted there and the rules from p on move ' +
      'down one. At most 100 rules per action.',
  })
  @ApiCreatedResponse({ type: FlowRuleDto })
  create(
    @Origin() origin: RequestOrigin,
    @Action() action: FlowAction,
    @Body() body: FlowRuleRequestDto,
  ): Promise<FlowRuleDto> {
    return this.rules.create(origin, action, body);
  }

  @Get('actions/:action/rules/:id')
  @RequirePermissions('orchestration:flows:read')
  @Audited('flow_rule', 'read')
  @ActionParam()
  @ApiOperation({ operationId: 'getFlowRule', summary: 'Get a rule' })
  @ApiOkResponse({ type: FlowRuleDto })
  get(@Principal() who: Principal, @Action() action: FlowAction, @RuleId() id: string): Promise<FlowRuleDto> {
    return this.rules.get(who, action, id);
  }

  @Put('actions/:action/rules/:id')
  @RequirePermissions('orchestration:flows:update')
  @ActionParam()
  @ApiOperation({
    operationId: 'updateFlowRule',
    summary: 'Replace a rule, and move it',
    description: '`position` is required: moving a rule renumbers the others, in one step.',
  })
  @ApiOkResponse({ type: FlowRuleDto })
  update(
    @Origin() origin: RequestOrigin,
    @Action() action: FlowAction,
    @RuleId() id: string,
    @Body() body: FlowRuleRequestDto,
  ): Promise<FlowRuleDto> {
    return this.rules.update(origin, action, id, body);
  }

  @Delete('actions/:action/rules/:id')
  @HttpCode(204)
  @RequirePermissions('orchestration:flows:update')
  @ActionParam()
  @ApiOperation({ operationId: 'deleteFlowRule', summary: 'Delete a rule (the rules after it move up one)' })
  @ApiNoContentResponse()
  delete(@Origin() origin: RequestOrigin, @Action() action: FlowAction, @RuleId() id: string): Promise<void> {
    return this.rules.delete(origin, action, id);
  }
}
