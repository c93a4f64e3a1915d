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

/** How a piece is written: its parameters, its CTE names, and its refusal. */
export interface PieceTools {
  /** Values go through `p.add`: placeholders are numbered across the whole statement. */
  p: Placeholders;
  /** Every CTE is named `name(base)`, unique within the statement. */
  name: (base: string) => string;
  /**
   * A SQL expression (for `result`) that, where `condition` holds, undoes the whole statement: the
   * statement fails with the error `refused` gives (by default the piece's own `refused`). NULL otherwise.
   */
  refuse: (condition: string, refused?: () => Error) => string;
}

export type PieceBuilder = (tools: PieceTools) => WritePiece;

/** SQLSTATE of `refuse_write()` (migration 21). */
const REFUSED = 'VT001';

/**
 * A piece's options: `then` receives its result after the statement ran; `refused` makes its refusal's
 * error; `reads`: it also reads tables that grow (a statement holding one is planned afresh each time, see
 * `UnitOfWork`).
 */
export interface PieceOptions {
  then?: (value: unknown) => void;
  refused?: () => Error;
  reads?: boolean;
}

/** What a writer outside the unit of work's own module needs of a change: its writes and its commit. */
export interface ChangeWrites {
  write(build: PieceBuilder, options?: PieceOptions): Promise<void>;
  afterCommit(fn: () => void): void;
}

/** How a batch's statement reaches the database. */
export type Query = (sql: string, params: unknown[]) => Promise<unknown[]>;

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
  private readonly pieces: (PieceOptions & { piece: WritePiece })[] = [];
  /** A piece's refusals that name their own error, by the name `refuse_write()` raises. */
  private readonly refusals = new Map<string, () => Error>();

  /** Adds a write. */
  add(build: PieceBuilder, options: PieceOptions = {}): void {
    const index = this.pieces.length;
    const piece = build({
      p: this.params,
      name: (base) => `${base}_${index}`,
      refuse: (condition, refused) => {
        let name = String(index);
        if (refused) {
          name = `${index}.${this.refusals.size}`;
          this.refusals.set(name, refused);
        }
        return `(CASE WHEN ${condition} THEN refuse_write(${this.params.add(name)}::text) END)`;
      },
    });
    this.pieces.push({ piece, ...options });
  }

  get size(): number {
    return this.pieces.length;
  }

  /** Whether a piece reads tables that grow: the statement is then not kept prepared. */
  get reads(): boolean {
    return this.pieces.some((piece) => piece.reads);
  }

  /** Sends the statement (nothing when empty), then hands each piece its result. */
  async run(query: Query): Promise<void> {
    if (!this.pieces.length) return;
    const ctes = this.pieces.flatMap(({ piece }) => piece.ctes);
    const results = this.pieces.map(({ piece }, i) => `${piece.result ?? 'NULL'} AS r${i}`);
    let row: Record<string, unknown>;
    try {
      [row] = (await query(
        `${ctes.length ? `WITH ${ctes.join(',\n')}\n` : ''}SELECT ${results.join(', ')}`,
        this.values,
      )) as Record<string, unknown>[];
    } catch (error) {
      throw this.refusal(error) ?? error;
    }
    this.pieces.forEach(({ then }, i) => then?.(row[`r${i}`]));
  }

  /** The error of the piece that refused the statement, if that is why it failed. */
  private refusal(error: unknown): Error | undefined {
    // pg's own error, or TypeORM's QueryFailedError around it.
    const e = error as {
      code?: unknown;
      message?: unknown;
      driverError?: { code?: unknown; message?: unknown };
    };
    const cause = e.driverError ?? e;
    if (cause.code !== REFUSED) return undefined;
    const name = String(cause.message);
    return (this.refusals.get(name) ?? this.pieces[Number(name)]?.refused)?.();
  }

  /** Runs one piece by itself, in the caller's transaction if there is one; answers its result. */
  static async runOne(query: Query, build: PieceBuilder, refused?: () => Error): Promise<unknown> {
    const batch = new WriteBatch();
    let value: unknown;
    batch.add(build, { then: (result) => (value = result), refused });
    await batch.run(query);
    return value;
  }
}
