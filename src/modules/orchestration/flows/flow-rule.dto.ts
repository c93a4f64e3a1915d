import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsArray, IsInt, IsObject, IsOptional, IsString, Length } from 'class-validator';
import { ConnectionDto } from '../connections/connection.dto';
import { ACTIONS, FLOW, type FlowAction } from './flow-conditions';

/** One condition of a rule; the names, operators and value shapes are listed in docs/routing.md. */
export class FlowConditionDto {
  /** @example "currency" */
  @ApiProperty({
    enum: [
      'amount',
      'currency',
      'country',
      'card_scheme',
      'card_bin',
      'payment_source',
      'merchant_initiated',
      'intent',
      'metadata',
    ],
  })
  name: string;

  /** @example "is_one_of" */
  @ApiProperty({ enum: ['is_between', 'is_one_of', 'is_not_one_of', 'equal_to'] })
  operator: string;

  /**
   * Depends on the name: a list of strings, a boolean, `{currency, min?, max?}` or `{key, value}`. For
   * `card_bin`: digit prefixes of 1 to 6 digits, or ranges `"<from>-<to>"` of two digit strings of equal
   * length (1 to 6), never more digits than a masked read of a card shows. @example ["USD"]
   */
  @ApiProperty({
    oneOf: [{ type: 'array', items: { type: 'string' } }, { type: 'boolean' }, { type: 'object' }],
  })
  value: unknown;
}

/** What a matching rule does: `list` (route-transaction: connection ids in order) or `boolean` (decline-early). */
export class RuleOutcomeDto {
  @ApiProperty({ enum: ['list', 'boolean'] })
  type: 'list' | 'boolean';

  /** 1 to 5 distinct connection ids for `list`; `true` for `boolean`. */
  @ApiProperty({ oneOf: [{ type: 'array', items: { type: 'string', format: 'uuid' } }, { type: 'boolean' }] })
  result: string[] | true;
}

/** The body of create and update. */
export class FlowRuleRequestDto {
  /** 1 to 200 characters. @example "USD to Stripe, then Adyen" */
  @IsString()
  @Length(1, 200)
  description: string;

  /** 0 to 10 conditions, all of which must hold; none matches every transaction. */
  @IsArray()
  @ApiProperty({ type: [FlowConditionDto] })
  conditions: unknown[];

  @IsObject()
  @ApiProperty({ type: RuleOutcomeDto })
  outcome: Record<string, unknown>;

  /** 1 to n+1 on create (default: last), 1 to n on update (required); the other rules move to keep 1..n. */
  @IsOptional()
  @IsInt()
  @ApiPropertyOptional({ type: 'integer', minimum: 1 })
  position?: number;
}

export class FlowRuleDto {
  @ApiProperty({ enum: ['rule'] })
  type: 'rule';

  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ enum: [FLOW] })
  flow: typeof FLOW;

  @ApiProperty({ enum: ACTIONS })
  action: FlowAction;

  description: string;

  /** 1..n in the order the rules are tried. */
  position: number;

  @ApiProperty({ type: [FlowConditionDto] })
  conditions: FlowConditionDto[];

  @ApiProperty({ type: RuleOutcomeDto })
  outcome: RuleOutcomeDto;

  created_at: string;
  updated_at: string;
}

/** What `evaluate` answers: whether the transaction would be declined, by which rule, or where it would go. */
export class FlowEvaluationDto {
  declined: boolean;

  /** The rule that decided (the decline rule, or the route rule), null when none matched. */
  @ApiProperty({ type: 'string', format: 'uuid', nullable: true })
  rule_id: string | null;

  /** The connections in the order they would be tried (none when declined or no rule matched). */
  @ApiProperty({ type: [ConnectionDto] })
  connections: ConnectionDto[];
}
