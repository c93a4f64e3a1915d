import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Condition, FlowAction } from '../flow-conditions';

/** What a rule does when it matches: the connections to try, in order, or a decline. */
export type RuleOutcome = { type: 'list'; result: string[] } | { type: 'boolean'; result: true };

/**
 * A rule of a flow's action, in `position` order (1..n without gaps per tenant, flow and action; the
 * unique key is checked at commit, so a reorder renumbers in one transaction).
 */
@Entity({ name: 'flow_rules' })
export class FlowRuleEntity {
  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 40 })
  flow: string;

  @Column({ type: 'varchar', length: 40 })
  action: FlowAction;

  @Column({ type: 'varchar', length: 200 })
  description: string;

  @Column({ type: 'int' })
  position: number;

  @Column({ type: 'jsonb' })
  conditions: Condition[];

  @Column({ type: 'jsonb' })
  outcome: RuleOutcome;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
