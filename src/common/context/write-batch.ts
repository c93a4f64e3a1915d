/** Positional parameters of the statement: `add(value)` answers its placeholder (`$n`). */
export interface Placeholders {
  add(value: unknown): string;
}

/**
 * One write of a combined statement: data-modifying CTEs (`name AS (INSERT ...)`), and optionally a
 * scalar SQL expression over them whose value is read back once the statement has run.
 */
export interface WritePiece {
  ctes: string[];
  result?: string;
}

/**
 * Builds a piece: values go through `p` (its placeholders are numbered across the whole statement), and
 * every CTE is named with `name(base)`, unique within the statement.
 */
export type PieceBuilder = (p: Placeholders, name: (base: string) => string) => WritePiece;

type Query = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * Writes gathered into one SQL statement of data-modifying CTEs. PostgreSQL runs a statement atomically,
 * so a request whose writes all need no answer before the end (inserts whose ids are generated, audit
 * rows, outbox events) commits them in one round trip, without BEGIN and COMMIT: all of them or none.
 * Every CTE runs once, to completion, whether or not the final SELECT reads it.
 */
export class WriteBatch {
  private readonly values: unknown[] = [];
  private readonly params: Placeholders = {
    add: (value) => `$${this.values.push(value)}`,
  };
  private readonly pieces: { piece: WritePiece; then?: (value: unknown) => void }[] = [];

  /** Adds a write; `then` receives its `result` after the statement has run. */
  add(build: PieceBuilder, then?: (value: unknown) => void): void {
    const index = this.pieces.length;
    this.pieces.push({ piece: build(this.params, (base) => `${base}_${index}`), then });
  }

  get size(): number {
    return this.pieces.length;
  }

  /** Sends the statement (nothing when empty), then hands each piece its result. */
  async run(query: Query): Promise<void> {
    if (!this.pieces.length) return;
    const ctes = this.pieces.flatMap(({ piece }) => piece.ctes);
    const results = this.pieces.map(({ piece }, i) => `${piece.result ?? 'NULL'} AS r${i}`);
    const [row] = await query(
      `${ctes.length ? `WITH ${ctes.join(',\n')}\n` : ''}SELECT ${results.join(', ')}`,
      this.values,
    );
    this.pieces.forEach(({ then }, i) => then?.(row[`r${i}`]));
  }

  /** Runs one piece by itself, in the caller's transaction if there is one; answers its result. */
  static async runOne(query: Query, build: PieceBuilder): Promise<unknown> {
    const batch = new WriteBatch();
    let value: unknown;
    batch.add(build, (result) => (value = result));
    await batch.run(query);
    return value;
  }
}
