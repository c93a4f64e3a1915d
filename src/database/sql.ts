/** Positional parameters for hand-written SQL: `p.add(value)` returns `$n`. */
export class SqlParams {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * One multi-row INSERT for a batch (never one statement per row). Columns are trusted identifiers;
 * values travel as parameters.
 */
export function multiRowInsert(
  table: string,
  columns: string[],
  rows: unknown[][],
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const tuples = rows.map((row) => {
    const placeholders = row.map((value) => {
      params.push(value);
      return `$${params.length}`;
    });
    return `(${placeholders.join(', ')})`;
  });
  return { sql: `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, params };
}

/** One INSERT of one row, each column with the SQL of its value (a parameter, a literal, `now()`). */
export function insertExpressions(table: string, columns: string[], expressions: string[]): string {
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${expressions.join(', ')})`;
}
