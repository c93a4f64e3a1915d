/**
 * Where a connection sends its calls: the built-in sandbox, the vendor's test endpoints or its live ones.
 * Here, below connections and processors, so that both read it without importing each other.
 */
export const CONNECTION_ENVIRONMENTS = ['sandbox', 'test', 'live'] as const;
export type ConnectionEnvironment = (typeof CONNECTION_ENVIRONMENTS)[number];
