import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../../common/unit-of-work/change';
import { LOCK_KEYS } from '../../../database/data-source';
import { GenerateSql } from '../../../database/generate-sql';
import { columnsOf, type RowOf, queryRows } from '../../../database/table';
import { FlowRuleEntity, type RuleOutcome } from './entities/flow-rule.entity';
import { FLOW, type Condition, type FlowAction } from './flow-conditions';

export type FlowRuleRow = RowOf<FlowRuleEntity>;

/** A rule as create and update write it. */
export interface RuleValues {
  description: string;
  conditions: Condition[];
  outcome: RuleOutcome;
}

const COLUMNS = columnsOf(FlowRuleEntity);

/** Examples for the SQL snapshots (`@GenerateSql`). */
const TENANT = '00000000-0000-4000-8000-000000000001';
const RULE = '00000000-0000-4000-8000-000000000009';
const AT = new Date('2026-01-02T03:04:05.000Z');
const VALUES: RuleValues = {
  description: 'USD to the first connection',
  conditions: [{ name: 'currency', operator: 'is_one_of', value: ['USD'] }],
  outcome: { type: 'list', result: ['00000000-0000-4000-8000-000000000003'] },
};

/**
 * Routing rules: every statement on `flow_rules`. Positions stay 1..n per tenant and action: every
 * write first takes the action's advisory lock, then moves the other rules and writes its own in the
 * same change (the unique key on positions is checked at commit). Reads on the pool see one committed
 * order, never half a reorder.
 */
@Injectable()
export class FlowRulesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The tenant's rules of both actions, each action in position order (what a transaction create reads). */
  @GenerateSql({ params: [TENANT] })
  listFlow(tenantId: string): Promise<FlowRuleRow[]> {
    return queryRows<FlowRuleRow>(
      this.dataSource,
      `SELECT ${COLUMNS} FROM flow_rules WHERE tenant_id = $1 AND flow = $2 ORDER BY action, position`,
      [tenantId, FLOW],
    );
  }

  /** The rules of one action, in position order. */
  @GenerateSql({ params: [TENANT, 'route-transaction'] })
  list(tenantId: string, action: FlowAction): Promise<FlowRuleRow[]> {
    return queryRows<FlowRuleRow>(
      this.dataSource,
      `SELECT ${COLUMNS} FROM flow_rules WHERE tenant_id = $1 AND flow = $2 AND action = $3 ORDER BY position`,
      [tenantId, FLOW, action],
    );
  }

  @GenerateSql({ params: [TENANT, 'route-transaction', RULE] })
  async find(tenantId: string, action: FlowAction, id: string): Promise<FlowRuleRow | undefined> {
    const rows = await queryRows<FlowRuleRow>(
      this.dataSource,
      `SELECT ${COLUMNS} FROM flow_rules WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND id = $4`,
      [tenantId, FLOW, action, id],
    );
    return rows[0];
  }

  /**
   * Takes the action's lock until the change ends and answers how many rules it has (the positions a
   * write may use), and the position of `id` when given (undefined: no such rule).
   */
  @GenerateSql({
    change: true,
    params: [TENANT, 'route-transaction', RULE],
    answers: [[{ locked: '' }], [{ n: 2, position: 1 }]],
  })
  async lock(
    change: Change,
    tenantId: string,
    action: FlowAction,
    id?: string,
  ): Promise<{ count: number; position: number | undefined }> {
    // The lock first, in a statement of its own: a statement reads what was committed when it began,
    // so the positions are read only once the lock is held (after the previous writer committed).
    await change.query(
      `SELECT pg_advisory_xact_lock(${LOCK_KEYS.flowRules}, hashtext($1::text || ':' || $2::text))`,
      [tenantId, action],
    );
    const [row] = await queryRows<{ n: number; position: number | null }>(
      change,
      `SELECT count(*)::int AS n, max(position) FILTER (WHERE id = $4::uuid) AS position
         FROM flow_rules WHERE tenant_id = $1 AND flow = $2 AND action = $3`,
      [tenantId, FLOW, action, id ?? null],
    );
    return { count: row.n, position: row.position ?? undefined };
  }

  /** Inserts a rule at `position`, the rules from there on moving down one. */
  @GenerateSql({ change: true, params: [TENANT, 'route-transaction', RULE, 1, VALUES, AT] })
  async insert(
    change: Change,
    tenantId: string,
    action: FlowAction,
    id: string,
    position: number,
    values: RuleValues,
    now: Date,
  ): Promise<FlowRuleRow> {
    await change.query(
      `UPDATE flow_rules SET position = position + 1
        WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND position >= $4`,
      [tenantId, FLOW, action, position],
    );
    const rows = await queryRows<FlowRuleRow>(
      change,
      `INSERT INTO flow_rules (tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING ${COLUMNS}`,
      [
        tenantId,
        id,
        FLOW,
        action,
        values.description,
        position,
        JSON.stringify(values.conditions),
        JSON.stringify(values.outcome),
        now,
      ],
    );
    return rows[0];
  }

  /** Replaces a rule and moves it from `from` to `to`, the rules between shifting by one. */
  @GenerateSql({ change: true, params: [TENANT, 'route-transaction', RULE, 2, 1, VALUES, AT] })
  async update(
    change: Change,
    tenantId: string,
    action: FlowAction,
    id: string,
    from: number,
    to: number,
    values: RuleValues,
    now: Date,
  ): Promise<FlowRuleRow> {
    if (to !== from)
      await change.query(
        `UPDATE flow_rules SET position = position + CASE WHEN $4::int < $5::int THEN -1 ELSE 1 END
          WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND id <> $6
            AND position BETWEEN least($4::int, $5::int) AND greatest($4::int, $5::int)`,
        [tenantId, FLOW, action, from, to, id],
      );
    const [rule] = await queryRows<FlowRuleRow>(
      change,
      `UPDATE flow_rules SET description = $4, position = $5, conditions = $6, outcome = $7, updated_at = $8
        WHERE tenant_id = $1 AND flow = $2 AND id = $3 RETURNING ${COLUMNS}`,
      [
        tenantId,
        FLOW,
        id,
        values.description,
        to,
        JSON.stringify(values.conditions),
        JSON.stringify(values.outcome),
        now,
      ],
    );
    return rule;
  }

  /** Deletes a rule at `position` and closes the gap. */
  @GenerateSql({ change: true, params: [TENANT, 'route-transaction', RULE, 1] })
  async delete(
    change: Change,
    tenantId: string,
    action: FlowAction,
    id: string,
    position: number,
  ): Promise<void> {
    await change.query(`DELETE FROM flow_rules WHERE tenant_id = $1 AND flow = $2 AND id = $3`, [
      tenantId,
      FLOW,
      id,
    ]);
    await change.query(
      `UPDATE flow_rules SET position = position - 1
        WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND position > $4`,
      [tenantId, FLOW, action, position],
    );
  }
}
