import type { AccessRule, RuleCondition, RuleTransform } from '../../../common/auth/access-rule';
import type { Principal } from '../../../common/auth/principal';

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

/** Rules in the order they are tried: ascending priority (the SQL form in token-search.repository.ts too). */
export const byPriority = (rules: AccessRule[]): AccessRule[] =>
  [...rules].sort((a, b) => a.priority - b.priority);

type Grants = Pick<Principal, 'permissions' | 'rules'>;

function evaluate(who: Grants, permission: string, token: TokenFacts): AccessDecision {
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

/** True when the decision allows the operation and shows the data in clear. */
export const reveals = (decision: AccessDecision): boolean =>
  decision.allowed && decision.transform === 'reveal';

/**
 * The one rule evaluator: flat permissions hold on every container (and never
 * reveal); otherwise the first rule by ascending priority that matches the token decides, allowing when
 * it grants `permission`, with its transform.
 *
 * A session is decided twice, and both must agree: by its own grants, and by what the application that
 * authorized it may do on that same token now (its flat permissions and its rules, priorities included,
 * over every container of the token). So a rule of the authorizer that withholds `permission` on one of
 * the token's containers withholds it from the session too, whatever the session's rules say. The
 * session gets what the authorizer would get: refused (403) where the authorizer is refused, unknown
 * (404) where no grant of the authorizer covers the token, and the data in clear only where both reveal
 * it; otherwise masked. Every per-token route, lists and searches (`accessPredicate`, the same walk in
 * SQL), and the proxies decide here, so none of them can be reached around it.
 */
export function decide(
  who: Grants & Pick<Principal, 'authorizer'>,
  permission: string,
  token: TokenFacts,
): AccessDecision {
  const own = evaluate(who, permission, token);
  if (!who.authorizer) return own;
  const authorizer = evaluate(who.authorizer, permission, token);
  return {
    allowed: own.allowed && authorizer.allowed,
    matched: own.matched && authorizer.matched,
    transform: own.transform === 'reveal' && !reveals(authorizer) ? 'mask' : own.transform,
  };
}

/**
 * Evaluating an expression over a token's stored data (a PATCH of its
 * `fingerprint_expression` or `search_indexes`) is reading it in clear, so it needs the rule deciding
 * `token:read` for the token to carry `reveal`. Flat permissions never reveal.
 */
export function mayEvaluateStoredData(who: Principal, token: TokenFacts): boolean {
  return reveals(decide(who, 'token:read', token));
}

/** `token:create` is needed on every destination container; returns the containers it is refused on. */
export function refusedContainers(who: Principal, token: TokenFacts): string[] {
  if (who.permissions.includes('token:create')) return [];
  return token.containers.filter(
    (container) => !decide(who, 'token:create', { ...token, containers: [container] }).allowed,
  );
}
