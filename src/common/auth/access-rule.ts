/**
 * What a read through a rule shows of a token's data: `mask`, `redact`
 * (nothing) or `reveal` (the data in clear; private applications and sessions only).
 */
export const RULE_TRANSFORMS = ['mask', 'redact', 'reveal'] as const;
export type RuleTransform = (typeof RULE_TRANSFORMS)[number];

export const CONDITION_ATTRIBUTES = ['id', 'type', 'container'] as const;
export const CONDITION_OPERATORS = ['equals', 'starts_with'] as const;

export interface RuleCondition {
  attribute: (typeof CONDITION_ATTRIBUTES)[number];
  operator: (typeof CONDITION_OPERATORS)[number];
  value: string;
}

/** An access rule, as stored on applications and sessions. */
export interface AccessRule {
  description?: string;
  priority: number;
  container?: string;
  conditions?: RuleCondition[];
  permissions: string[];
  transform?: RuleTransform;
}

/**
 * A container path: `/` (the root, which a rule covers every container from) or `/name/`, `/name/child/`
 * and so on. A rule on a container covers it and every container below it.
 */
export const CONTAINER_PATTERN = /^\/([a-z0-9_-]+\/)*$/;
export const CONTAINER_FORMAT =
  'container must be / or look like /name/ or /name/child/ (lower case, digits, _ and -)';
