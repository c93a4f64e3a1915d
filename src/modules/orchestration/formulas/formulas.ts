import catalog from './formula-catalog.json';

export const FEATURES = [
  'three_d_secure_pass_through',
  'delayed_capture',
  'partial_capture',
  'partial_refunds',
  'refunds',
  'zero_auth',
  'void',
  'network_tokens',
] as const;
export type Feature = (typeof FEATURES)[number];

export interface FormulaField {
  key: string;
  display_name: string;
  required: boolean;
  format: string;
  secret: boolean;
}

/** A connection formula: what a connection to one vendor needs and what that vendor supports. */
export interface Formula {
  id: string;
  display_name: string;
  method: string;
  fields: FormulaField[];
  supported_currencies: string[];
  supported_countries: string[];
  supported_features: Record<Feature, boolean>;
}

/**
 * The 18 card formulas: `formula-catalog.json` is the published `formulas.json` under a name of its own
 * (beside `formulas.ts`, a `formulas.json` is what ts-node's `require('./formulas')` finds first).
 */
export const FORMULAS: readonly Formula[] = catalog;

const BY_ID = new Map(FORMULAS.map((f) => [f.id, f]));

export function findFormula(id: string): Formula | undefined {
  return BY_ID.get(id);
}

export function supports(formula: Formula, feature: Feature): boolean {
  return formula.supported_features[feature] === true;
}
