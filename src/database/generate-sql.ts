/**
 * Marks a repository method whose SQL is rendered into the committed snapshots under `test/sql/`: the
 * snapshot check calls it with the example arguments given here (after a recording change when `change` is
 * set, the method taking its change first) against a recording connection, and compares every statement it
 * sends with the committed file, so that a review shows each change to the SQL the service runs.
 */
export interface GenerateSqlOptions {
  /** The snapshot entry's name, when one method is rendered with several sets of arguments. */
  name?: string;
  /** The method takes a `Change` as its first parameter (the check hands it a recording one). */
  change?: boolean;
  /** Example arguments (after the change). */
  params: unknown[];
  /**
   * What the recording connection answers the method's statements, in the order it sends them, as pg
   * would: each the rows of one statement, or `{ rows, rowCount }`. Needed where the method must read
   * rows to go on (a lock it must get, a row it reads a value of, a full page TypeORM then counts); past
   * the list, and by default, no rows. TypeORM makes of them what it makes of pg's answers (rows and
   * count for an UPDATE or DELETE).
   */
  answers?: unknown[];
}

export interface GeneratedMethod {
  method: string;
  queries: GenerateSqlOptions[];
}

const registry = new Map<object, GeneratedMethod[]>();

export function GenerateSql(...queries: GenerateSqlOptions[]): MethodDecorator {
  return (target, key) => {
    const list = registry.get(target.constructor) ?? [];
    list.push({ method: String(key), queries: queries.length ? queries : [{ params: [] }] });
    registry.set(target.constructor, list);
  };
}

/** The methods of a repository class marked with `@GenerateSql`, in declaration order. */
export const generatedSql = (repository: object): GeneratedMethod[] => registry.get(repository) ?? [];
