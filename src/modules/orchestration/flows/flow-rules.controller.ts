import { Body, Controller, Delete, Get, HttpCode, Param, PipeTransform, Post, Put } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Audited } from '../../../common/audit/audited.decorator';
import { Principal } from '../../../common/auth/principal';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import { ParseIdPipe } from '../../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { FlowAction } from './flow-conditions';
import { FlowRuleDto, FlowRuleRequestDto } from './flow-rule.dto';
import { actionOf, FlowRulesService } from './flow-rules.service';
import { FlowRulesApi } from './flow-rules.openapi';

const RuleId = () => Param('id', new ParseIdPipe('Rule'));
/** The action in the path; any other is a 404, as for a route that does not exist. */
class ParseActionPipe implements PipeTransform<string, FlowAction> {
  transform(value: string): FlowAction {
    return actionOf(value);
  }
}
const Action = () => Param('action', new ParseActionPipe());

@ApiTags('Orchestration')
@Controller('orchestration/flows/card-transaction')
export class FlowRulesController {
  constructor(private readonly rules: FlowRulesService) {}

  @Get('actions/:action/rules')
  @RequirePermissions('orchestration:flows:read')
  @Audited('flow_rule', 'read')
  @FlowRulesApi.list()
  list(@Principal() who: Principal, @Action() action: FlowAction): Promise<FlowRuleDto[]> {
    return this.rules.list(who, action);
  }

  @Post('actions/:action/rules')
  @RequirePermissions('orchestration:flows:update')
  @FlowRulesApi.create()
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
  @FlowRulesApi.get()
  get(@Principal() who: Principal, @Action() action: FlowAction, @RuleId() id: string): Promise<FlowRuleDto> {
    return this.rules.get(who, action, id);
  }

  @Put('actions/:action/rules/:id')
  @RequirePermissions('orchestration:flows:update')
  @FlowRulesApi.update()
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
  @FlowRulesApi.delete()
  delete(@Origin() origin: RequestOrigin, @Action() action: FlowAction, @RuleId() id: string): Promise<void> {
    return this.rules.delete(origin, action, id);
  }
}
