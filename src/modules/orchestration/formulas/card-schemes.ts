/** Card brands (as the vault detects them) whose scheme name differs (as transactions and stored cards show it). */
const SCHEMES: Record<string, string> = { 'american-express': 'amex', 'diners-club': 'diners-club' };

/** The scheme a transaction or stored card shows for a token's card brand. */
export const schemeOf = (brand: string | null): string | null => (brand ? (SCHEMES[brand] ?? brand) : null);
