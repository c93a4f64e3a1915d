import type { AccessRule, RuleCondition, RuleTransform } from '../../common/auth/access-rule';
import type { Principal } from '../../common/auth/principal';

/** What access rules can see of a token. */
export interface TokenFacts {
  id: string;
  type: string;
  containers: string[];
}

export interface AccessDecision {
  allowed: boolean;
  /** False when no rule matched the token at all (reads then answer 404: the token stays unknown). */
  matched: boolean;
  transform: RuleTransform;
}

const covers = (ruleContainer: string, container: string): boolean => container.startsWith(ruleContainer);

function conditionHolds(condition: RuleCondition, token: TokenFacts): boolean {
  const values =
    condition.attribute === 'container'
      ? token.containers
      : [condition.attribute === 'id' ? token.id : token.type];
  return values.some((v) =>
    condition.operator === 'equals' ? v === condition.value : v.startsWith(condition.value),
  );
}

export function ruleMatches(rule: AccessRule, token: TokenFacts): boolean {
  if (rule.container !== undefined) return token.containers.some((c) => covers(rule.container!, c));
  return (rule.conditions ?? []).every((condition) => conditionHolds(condition, token));
}

const byPriority = (rules: AccessRule[]): AccessRule[] => [...rules].sort((a, b) => a.priority - b.priority);

/**
 * The one rule evaluator (contract section 5): flat permissions hold on every container; otherwise the
 * first rule by ascending priority that matches the token decides, allowing when it grants `permission`.
 */
export function decide(who: Principal, permission: string, token: TokenFacts): AccessDecision {
  if (who.permissions.includes(permission)) return { allowed: true, matched: true, transform: 'mask' };
  for (const rule of byPriority(who.rules)) {
    if (ruleMatches(rule, token)) {
      return {
        allowed: rule.permissions.includes(permission),
        matched: true,
        transform: rule.transform ?? 'mask',
      };
    }
  }
  return { allowed: false, matched: false, transform: 'mask' };
}

/**
 * Contract section 15: evaluating an expression over a token's stored data (a PATCH of its
 * `fingerprint_expression` or `search_indexes`) is reading it in clear, so it needs a rule with
 * `token:read` and the `reveal` transform covering the token. Flat permissions never reveal.
 */
export function mayEvaluateStoredData(who: Principal, token: TokenFacts): boolean {
  const decision = decide(who, 'token:read', token);
  // No rule can carry `reveal` until section 12 lands (RULE_TRANSFORMS), so this refuses everyone today.
  return decision.allowed && (decision.transform as string) === 'reveal';
}

/** `token:create` is needed on every destination container; returns the containers it is refused on. */
export function refusedContainers(who: Principal, token: TokenFacts): string[] {
  if (who.permissions.includes('token:create')) return [];
  return token.containers.filter(
    (container) => !decide(who, 'token:create', { ...token, containers: [container] }).allowed,
  );
}

/**
 * The same decision as SQL over the `tokens` table (alias `t`), so that lists and searches filter and
 * count exactly the tokens the caller may see. Parameters are appended to `params`.
 */
export function accessPredicate(who: Principal, permission: string, params: unknown[]): string {
  if (who.permissions.includes(permission)) return 'TRUE';
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const startsWith = (column: string, value: string): string =>
    `left(${column}, char_length(${param(value)}::text)) = $${params.length}::text`;
  const anyContainer = (test: (c: string) => string): string =>
    `EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE ${test('c')})`;
  const branches = byPriority(who.rules).map((rule) => {
    let match: string;
    if (rule.container !== undefined) {
      const container = rule.container;
      match = anyContainer((c) => startsWith(c, container));
    } else {
      const parts = (rule.conditions ?? []).map((cond) => {
        const test = (column: string): string =>
          cond.operator === 'equals'
            ? `${column} = ${param(cond.value)}::text`
            : startsWith(column, cond.value);
        if (cond.attribute === 'container') return anyContainer(test);
        return test(cond.attribute === 'id' ? 't.id::text' : 't.type');
      });
      match = parts.length ? parts.join(' AND ') : 'TRUE';
    }
    return `WHEN ${match} THEN ${rule.permissions.includes(permission) ? 'TRUE' : 'FALSE'}`;
  });
  return branches.length ? `(CASE ${branches.join(' ')} ELSE FALSE END)` : 'FALSE';
}
