import { Injectable, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { ValidationException } from '../../../common/errors/domain.exception';
import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { ChangeNotifications } from '../../../database/change-notifications';
import { partOf } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { ConnectionsRepository } from '../connections/connections.repository';
import { OrchestrationException } from '../orchestration.errors';
import type { RuleOutcome } from './entities/flow-rule.entity';
import {
  ACTIONS,
  Condition,
  FLOW,
  FlowAction,
  matches,
  parseCondition,
  TransactionFacts,
} from './flow-conditions';
import type { FlowRuleDto, FlowRuleRequestDto } from './flow-rule.dto';
import { FlowRuleRow, FlowRulesRepository, RuleValues } from './flow-rules.repository';

export const MAX_RULES = 100;
/** How many tenants' rules an instance keeps in memory, and for how long at most (a bound if a notice were lost). */
const CACHE_SIZE = 10_000;
const CACHE_TTL_MS = 30_000;
const MAX_CONDITIONS = 10;
const MAX_CONNECTIONS = 5;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the rules decide for a transaction create without `connection_id`. */
export type RoutingDecision =
  | { declined: true; ruleId: string }
  /** `ruleId` null: no route rule matched (no candidates). */
  | { declined: false; ruleId: string | null; candidates: string[] };

export function ruleDto(row: FlowRuleRow): FlowRuleDto {
  return {
    type: 'rule',
    id: row.id,
    flow: FLOW,
    action: row.action,
    description: row.description,
    position: row.position,
    // Keys in the documented order (jsonb keeps its own).
    conditions: row.conditions.map(({ name, operator, value }) => ({
      name,
      operator,
      value:
        name === 'amount'
          ? (({ currency, min, max }) => ({
              currency,
              ...(min !== undefined ? { min } : {}),
              ...(max !== undefined ? { max } : {}),
            }))(value)
          : name === 'metadata'
            ? { key: (value as { key: string }).key, value: (value as { value: string }).value }
            : value,
    })),
    outcome: { type: row.outcome.type, result: row.outcome.result },
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The action named in a path, or a 404 (as for any route that does not exist). */
export function actionOf(action: string): FlowAction {
  if (!(ACTIONS as readonly string[]).includes(action)) throw OrchestrationException.ruleNotFound();
  return action as FlowAction;
}

/**
 * Routing rules of the `card-transaction` flow (docs/routing.md): their CRUD, positions kept 1..n in
 * one change per write, and the decision they make for a transaction. Each tenant's rules are kept in
 * memory while the instance listens for changes (ChangeNotifications, as keys are): a change on any
 * instance empties every instance's cache when it commits (this instance's at once), and nothing is
 * served from memory while the listening connection is down (nor with the embedded database). What is
 * kept is one committed read of all the tenant's rules: a payment never sees half a reorder.
 */
@Injectable()
export class FlowRulesService implements OnModuleInit {
  private readonly cache = new Map<string, { rows: FlowRuleRow[]; until: number }>();
  /** Counts changes: a read that overlapped one is not kept (it may have read the old rules). */
  private generation = 0;

  constructor(
    private readonly rules: FlowRulesRepository,
    private readonly connections: ConnectionsRepository,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
    private readonly changes: ChangeNotifications,
  ) {}

  onModuleInit(): void {
    this.changes.onChange((table) => {
      if (table === undefined || table === 'flow_rules') this.invalidate();
    });
  }

  /** Forgets every tenant's rules (a change committed here, or announced by the database). */
  invalidate(): void {
    this.generation++;
    this.cache.clear();
  }

  /** The tenant's rules of both actions, in position order: from memory while that is safe. */
  private async tenantRules(tenantId: string): Promise<FlowRuleRow[]> {
    if (!this.changes.listening) return this.rules.listFlow(tenantId);
    const now = Date.now();
    const cached = this.cache.get(tenantId);
    if (cached && cached.until > now) return cached.rows;
    const generation = this.generation;
    const rows = await this.rules.listFlow(tenantId);
    if (this.changes.listening && generation === this.generation) {
      if (this.cache.size >= CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(tenantId, { rows, until: now + CACHE_TTL_MS });
    }
    return rows;
  }

  async list(who: Principal, action: FlowAction): Promise<FlowRuleDto[]> {
    return (await this.rules.list(who.tenantId, action)).map(ruleDto);
  }

  async get(who: Principal, action: FlowAction, id: string): Promise<FlowRuleDto> {
    const row = await this.rules.find(who.tenantId, action, id);
    if (!row) throw OrchestrationException.ruleNotFound();
    return ruleDto(row);
  }

  async create(origin: RequestOrigin, action: FlowAction, body: FlowRuleRequestDto): Promise<FlowRuleDto> {
    const tenantId = origin.actor.tenantId;
    const values = await this.values(tenantId, action, body);
    // One change, which stores the idempotent answer with the rule (a retry after a crash answers it).
    return this.work.transaction(origin, async (change) => {
      const { count } = await this.rules.lock(change, tenantId, action);
      if (count >= MAX_RULES)
        throw ValidationException.field('position', `an action holds at most ${MAX_RULES} rules`);
      const position = body.position ?? count + 1;
      if (position < 1 || position > count + 1)
        throw ValidationException.field('position', `position must be between 1 and ${count + 1}`);
      const row = await this.rules.insert(
        change,
        tenantId,
        action,
        randomUUID(),
        position,
        values,
        this.clock.now(),
      );
      change.audit({
        entityType: 'flow_rule',
        entityId: row.id,
        operation: 'create',
        message: `Rule created: ${action} at position ${position}`,
      });
      change.afterCommit(() => this.invalidate());
      return ruleDto(row);
    });
  }

  async update(
    origin: RequestOrigin,
    action: FlowAction,
    id: string,
    body: FlowRuleRequestDto,
  ): Promise<FlowRuleDto> {
    const tenantId = origin.actor.tenantId;
    // Another tenant's rule (or none) is a 404 before anything in the body is looked at.
    if (!(await this.rules.find(tenantId, action, id))) throw OrchestrationException.ruleNotFound();
    if (body.position === undefined) throw ValidationException.field('position', 'position is required');
    const values = await this.values(tenantId, action, body);
    return this.work.transaction(origin, async (change) => {
      const { count, position } = await this.rules.lock(change, tenantId, action, id);
      if (position === undefined) throw OrchestrationException.ruleNotFound();
      const to = body.position!;
      if (to < 1 || to > count)
        throw ValidationException.field('position', `position must be between 1 and ${count}`);
      const row = await this.rules.update(
        change,
        tenantId,
        action,
        id,
        position,
        to,
        values,
        this.clock.now(),
      );
      change.audit({
        entityType: 'flow_rule',
        entityId: id,
        operation: 'update',
        message:
          to === position ? 'Rule updated' : `Rule updated and moved from position ${position} to ${to}`,
      });
      change.afterCommit(() => this.invalidate());
      return ruleDto(row);
    });
  }

  async delete(origin: RequestOrigin, action: FlowAction, id: string): Promise<void> {
    const tenantId = origin.actor.tenantId;
    await this.work.transaction(partOf(origin), async (change) => {
      const { position } = await this.rules.lock(change, tenantId, action, id);
      if (position === undefined) throw OrchestrationException.ruleNotFound();
      await this.rules.delete(change, tenantId, action, id, position);
      change.audit({
        entityType: 'flow_rule',
        entityId: id,
        operation: 'delete',
        message: `Rule deleted from position ${position}`,
      });
      change.afterCommit(() => this.invalidate());
    });
  }

  /**
   * What the rules decide for a transaction: the first `decline-early` rule that matches declines it;
   * else (when `route`: the payment names no connection) the first matching `route-transaction` rule
   * gives its connections, in order. One committed read of the tenant's rules (or its copy in memory):
   * a concurrent reorder is seen before or after, never halfway.
   */
  async decide(tenantId: string, facts: TransactionFacts, route = true): Promise<RoutingDecision> {
    const rows = await this.tenantRules(tenantId);
    const first = (action: FlowAction) =>
      rows.find((row) => row.action === action && matches(row.conditions, facts));
    const decline = first('decline-early');
    if (decline) return { declined: true, ruleId: decline.id };
    const chosen = route ? first('route-transaction') : undefined;
    if (!chosen || chosen.outcome.type !== 'list') return { declined: false, ruleId: null, candidates: [] };
    return { declined: false, ruleId: chosen.id, candidates: chosen.outcome.result };
  }

  /** The body checked, every error named by its path; connection ids must be the tenant's. */
  private async values(tenantId: string, action: FlowAction, body: FlowRuleRequestDto): Promise<RuleValues> {
    const errors: FieldErrors = {};
    const conditions: Condition[] = [];
    if (body.conditions.length > MAX_CONDITIONS)
      addFieldError(errors, 'conditions', `a rule has at most ${MAX_CONDITIONS} conditions`);
    else
      body.conditions.forEach((input, i) => {
        const condition = parseCondition(input);
        if (typeof condition === 'string') addFieldError(errors, `conditions[${i}]`, condition);
        else conditions.push(condition);
      });
    const outcome = await this.outcome(tenantId, action, body.outcome, errors);
    if (Object.keys(errors).length || !outcome) throw new ValidationException(errors);
    return { description: body.description, conditions, outcome };
  }

  private async outcome(
    tenantId: string,
    action: FlowAction,
    input: Record<string, unknown>,
    errors: FieldErrors,
  ): Promise<RuleOutcome | undefined> {
    const extra = Object.keys(input).filter((key) => key !== 'type' && key !== 'result');
    if (action === 'decline-early') {
      if (input.type !== 'boolean' || input.result !== true || extra.length) {
        addFieldError(
          errors,
          'outcome',
          'the outcome of decline-early is {"type": "boolean", "result": true}',
        );
        return undefined;
      }
      return { type: 'boolean', result: true };
    }
    if (input.type !== 'list' || extra.length) {
      addFieldError(
        errors,
        'outcome',
        'the outcome of route-transaction is {"type": "list", "result": [connection ids]}',
      );
      return undefined;
    }
    const result = input.result;
    if (!Array.isArray(result) || result.length < 1 || result.length > MAX_CONNECTIONS) {
      addFieldError(
        errors,
        'outcome.result',
        `outcome.result must list 1 to ${MAX_CONNECTIONS} connection ids`,
      );
      return undefined;
    }
    if (new Set(result).size !== result.length) {
      addFieldError(errors, 'outcome.result', 'outcome.result must not list a connection twice');
      return undefined;
    }
    let valid = true;
    for (const [i, id] of result.entries()) {
      const known = typeof id === 'string' && UUID.test(id) && (await this.connections.find(tenantId, id));
      if (!known) {
        addFieldError(errors, `outcome.result[${i}]`, 'no such connection');
        valid = false;
      }
    }
    return valid ? { type: 'list', result: (result as string[]).map((id) => id.toLowerCase()) } : undefined;
  }
}
