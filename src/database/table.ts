import { getMetadataArgsStorage } from 'typeorm';
import type { EntityClass } from './data-source';
import { insertExpressions, multiRowInsert, SqlParams } from './sql';

/**
 * One definition per table: the entity class. Repositories that write raw SQL take from it the table's
 * name, its column list and the type of its rows, instead of repeating them by hand. Everything here
 * reads TypeORM's decorator metadata, which exists as soon as the entity's module has loaded, so the
 * helpers can build module-level constants; they throw at that moment (the import fails) when an entity
 * breaks the naming convention `RowOf` relies on, so that the type can never disagree with the SQL.
 */

/** `createdAt` -> `created_at`, `threeDSecure` -> `three_d_secure`: the column name of a property. */
export type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : S;

/** The row of an entity's table as raw SQL answers it: the entity's properties under their column names. */
export type RowOf<E> = { [K in keyof E as K extends string ? SnakeCase<K> : never]: E[K] };

/** A column of `RowOf<E>`: what `except` and `only` name. */
export type ColumnOf<E> = keyof RowOf<E> & string;

/** `SnakeCase` at run time. */
export const snakeCase = (property: string): string =>
  property.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** One column of an entity, as the helpers use it. */
export interface TableColumn {
  property: string;
  name: string;
  /** The SQL type as written in the entity (`varchar`, `timestamptz`, ...), without length. */
  type: string;
  length?: number;
  array: boolean;
  nullable: boolean;
  primary: boolean;
}

/** What the helpers know of one entity. */
export interface Table {
  name: string;
  columns: TableColumn[];
}

const tables = new Map<EntityClass, Table>();

/** The table of an entity, read from its decorators once; throws if it does not follow the conventions. */
export function tableOf(entity: EntityClass): Table {
  const known = tables.get(entity);
  if (known) return known;
  const storage = getMetadataArgsStorage();
  const table = storage.tables.find((t) => t.target === entity);
  if (!table?.name) throw new Error(`${entity.name} is not an entity with a table name (@Entity({ name }))`);
  const args = storage.columns.filter((c) => c.target === entity);
  if (!args.length) throw new Error(`${entity.name} has no columns`);
  const columns = args.map((arg): TableColumn => {
    const { propertyName: property, options } = arg;
    const where = `${entity.name}.${property}`;
    if (arg.mode !== 'regular')
      throw new Error(`${where}: a ${arg.mode} column; only plain @Column/@PrimaryColumn are described`);
    const name = options.name ?? property;
    if (name !== snakeCase(property))
      throw new Error(
        `${where}: column "${name}" is not "${snakeCase(property)}", the snake_case of its property (RowOf would lie)`,
      );
    if (typeof options.type !== 'string') throw new Error(`${where}: give the column's SQL type as a string`);
    return {
      property,
      name,
      type: options.type,
      length: options.length === undefined ? undefined : Number(options.length),
      array: options.array === true,
      nullable: options.nullable === true,
      primary: options.primary === true,
    };
  });
  const described = { name: table.name, columns };
  tables.set(entity, described);
  return described;
}

/** Which of an entity's columns a list holds: all (the default), all but `except`, or `only` (in table order). */
export interface ColumnChoice<E> {
  except?: readonly ColumnOf<E>[];
  only?: readonly ColumnOf<E>[];
}

function chosen<E>(entity: new () => E, choice: ColumnChoice<E> = {}): TableColumn[] {
  const { columns } = tableOf(entity as EntityClass);
  const names = new Set(columns.map((c) => c.name));
  for (const name of [...(choice.except ?? []), ...(choice.only ?? [])])
    if (!names.has(name)) throw new Error(`${entity.name} has no column ${name}`);
  return columns.filter(
    (c) =>
      !(choice.except as readonly string[] | undefined)?.includes(c.name) &&
      (!choice.only || (choice.only as readonly string[]).includes(c.name)),
  );
}

/** The column names of an entity's table, in declaration order. */
export function columnNamesOf<E>(entity: new () => E, choice?: ColumnChoice<E>): ColumnOf<E>[] {
  return chosen(entity, choice).map((c) => c.name as ColumnOf<E>);
}

/** The column list for SQL: `t.tenant_id, t.id, ...` with an alias, `tenant_id, id, ...` without. */
export function columnsOf<E>(entity: new () => E, alias?: string, choice?: ColumnChoice<E>): string {
  const prefix = alias ? `${alias}.` : '';
  return chosen(entity, choice)
    .map((c) => `${prefix}${c.name}`)
    .join(', ');
}

/** A column's type as a record definition needs it: char keeps its length (else it would be char(1)). */
const recordType = (c: TableColumn): string => {
  const sized = (c.type === 'char' || c.type === 'character') && c.length ? `${c.type}(${c.length})` : c.type;
  return c.array ? `${sized}[]` : sized;
};

/** The `name type` list that reads the table's rows from JSON: `jsonb_to_recordset($1::jsonb) AS r(...)`. */
export function recordsetOf<E>(entity: new () => E, choice?: ColumnChoice<E>): string {
  return chosen(entity, choice)
    .map((c) => `${c.name} ${recordType(c)}`)
    .join(', ');
}

/** The name of an entity's table. */
export const tableNameOf = (entity: EntityClass): string => tableOf(entity).name;

/**
 * One INSERT of one row given by column name (the columns it leaves out take their defaults): the table
 * and the names come from the entity, the values travel as parameters, in the row's order.
 */
export function insertOf<E>(entity: new () => E, row: Partial<RowOf<E>>): { sql: string; params: unknown[] } {
  const columns = Object.keys(row);
  chosen(entity, { only: columns as ColumnOf<E>[] });
  return multiRowInsert(tableOf(entity as EntityClass).name, columns, [Object.values(row)]);
}

/**
 * `INSERT INTO table (columns) VALUES (expressions)` of one row, each column given with the SQL of its
 * value (a parameter such as `$1`, a literal, `now()`), in the statement's order.
 */
export function insertSql<E>(entity: new () => E, values: { [C in ColumnOf<E>]?: string }): string {
  const columns = Object.keys(values);
  chosen(entity, { only: columns as ColumnOf<E>[] });
  return insertExpressions(tableOf(entity as EntityClass).name, columns, Object.values(values) as string[]);
}

/*
 * The statements themselves. Every repository writes its SQL as text, with the column lists above and
 * the helpers below, and reads its answers through `select` (rows of an entity's columns, typed by the
 * very list the statement selects) or `queryRows` (computed columns, typed once next to the SQL).
 */

/** What runs SQL: a change, the pool (`DataSource`), a transaction's entity manager. */
export interface SqlRunner {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * The rows of an answer: TypeORM answers an UPDATE or a DELETE (RETURNING or not) `[rows, count]`,
 * anything else its rows. A row is an object, never an array, so the two cannot be confused.
 */
export function answeredRows(answer: unknown): unknown[] {
  if (!Array.isArray(answer)) return [];
  const [first, second] = answer as unknown[];
  return answer.length === 2 && Array.isArray(first) && typeof second === 'number' ? first : answer;
}

/** An entity's columns as a statement selects them, and the type of the rows it then answers. */
export interface Selection<R> {
  /** The column list, for the statement's text. */
  readonly sql: string;
  /** Never set: carries the row type from the list to `select`. */
  readonly row?: R;
}

/** Where a column list is taken from (`alias.column`) and which of the entity's columns it holds. */
export interface SelectionOptions<E, K extends ColumnOf<E>, X extends ColumnOf<E>> {
  alias?: string;
  only?: readonly K[];
  except?: readonly X[];
}

/** The columns of an entity's rows as raw SQL answers them (`RowOf`): `t.tenant_id, t.id, ...`. */
export function rowsOf<E, K extends ColumnOf<E> = ColumnOf<E>, X extends ColumnOf<E> = never>(
  entity: new () => E,
  options: SelectionOptions<E, K, X> = {},
): Selection<Omit<Pick<RowOf<E>, K>, X>> {
  return { sql: columnsOf(entity, options.alias, options) };
}

/** `R` with every column renamed `${P}${column}`: a joined table's columns beside the main table's. */
export type Prefixed<R, P extends string> = { [K in keyof R & string as `${P}${K}`]: R[K] };

/** The rows a selection answers. */
export type RowType<S> = S extends Selection<infer R> ? R : never;

/**
 * Some columns of a joined table under a prefix, so that they cannot collide with the main table's:
 * `c.formula_id AS c_formula_id, ...`, typed from the entity.
 */
export function prefixedRowsOf<E, K extends ColumnOf<E>, P extends string>(
  entity: new () => E,
  options: { alias: string; only: readonly K[]; prefix: P },
): Selection<Prefixed<Pick<RowOf<E>, K>, P>> {
  const sql = chosen(entity, options)
    .map((c) => `${options.alias}.${c.name} AS ${options.prefix}${c.name}`)
    .join(', ');
  return { sql };
}

/** The columns of a LEFT JOIN's table: each may be null (no row joined). */
export const optional = <R>(selection: Selection<R>): Selection<{ [K in keyof R]: R[K] | null }> => selection;

/** The property of `E` a column of `RowOf<E>` holds. */
type PropertyOf<E, C extends ColumnOf<E>> = {
  [K in keyof E & string]: SnakeCase<K> extends C ? K : never;
}[keyof E & string];

/**
 * The columns of an entity under its property names, so that the rows are shaped as the entity:
 * `t.created_at AS "createdAt"` (for the services that work with the entity's objects).
 */
export function entitiesOf<E, K extends ColumnOf<E> = ColumnOf<E>, X extends ColumnOf<E> = never>(
  entity: new () => E,
  options: SelectionOptions<E, K, X> = {},
): Selection<Omit<Pick<E, PropertyOf<E, K>>, PropertyOf<E, X>>> {
  const prefix = options.alias ? `${options.alias}.` : '';
  const sql = chosen(entity, options)
    .map((c) => (c.name === c.property ? `${prefix}${c.name}` : `${prefix}${c.name} AS "${c.property}"`))
    .join(', ');
  return { sql };
}

/** Columns a statement computes (`to_char(...) AS cursor_at`), their row type given once, next to the SQL. */
export const computed = <R>(sql: string): Selection<R> => ({ sql });

/** Two selections of one statement (an entity's columns and computed ones, two joined tables). */
export const joined = <A, B>(a: Selection<A>, b: Selection<B>): Selection<A & B> => ({
  sql: `${a.sql}, ${b.sql}`,
});

/**
 * Runs a statement that selects (or returns) `selection`: `statement` gets the column list, and the
 * rows are typed by the same selection, so the list and the type cannot disagree.
 */
export async function select<R>(
  db: SqlRunner,
  selection: Selection<R>,
  statement: (columns: string) => string,
  params: unknown[] = [],
): Promise<R[]> {
  return answeredRows(await db.query(statement(selection.sql), params)) as R[];
}

/**
 * Runs a statement whose rows are computed (counts, joins, a flag): `R`, given next to the SQL, says
 * what it selects; build it from entity types (`RowOf<E>[...]`) where a column is an entity's.
 */
export async function queryRows<R>(db: SqlRunner, sql: string, params: unknown[] = []): Promise<R[]> {
  return answeredRows(await db.query(sql, params)) as R[];
}

/**
 * Runs an UPDATE or a DELETE without RETURNING and answers how many rows it changed (TypeORM answers
 * such a statement `[rows, count]`).
 */
export async function affectedRows(db: SqlRunner, sql: string, params: unknown[] = []): Promise<number> {
  const answer = await db.query(sql, params);
  if (Array.isArray(answer) && answer.length === 2 && typeof answer[1] === 'number') return answer[1];
  throw new Error(`not the answer of an UPDATE or DELETE: ${sql.slice(0, 60)}`);
}

/** A value as PostgreSQL takes it for a column: JSON columns as their text (pg would send an array as one). */
const columnValue = (column: TableColumn, value: unknown): unknown =>
  (column.type === 'jsonb' || column.type === 'json') && value !== null ? JSON.stringify(value) : value;

/**
 * The columns of `values` (entity properties) that are set, in the entity's order, with their values;
 * properties that are no column are left out, as TypeORM's `insert` and `update` left them.
 */
function given<E>(entity: new () => E, values: Partial<E>): { column: TableColumn; value: unknown }[] {
  const record = values as Record<string, unknown>;
  return tableOf(entity as EntityClass)
    .columns.filter((c) => record[c.property] !== undefined)
    .map((column) => ({ column, value: columnValue(column, record[column.property]) }));
}

/**
 * `INSERT INTO table (columns) VALUES (...)` of one entity object: the properties it sets, as columns
 * in the entity's order (those it leaves undefined take their defaults), their values as parameters.
 */
export function insertEntity<E>(entity: new () => E, values: Partial<E>): { sql: string; params: unknown[] } {
  const set = given(entity, values);
  return multiRowInsert(
    tableOf(entity as EntityClass).name,
    set.map((s) => s.column.name),
    [set.map((s) => s.value)],
  );
}

/** `column = $n, ...` of an UPDATE, for the properties `changes` sets, their values added to `p`. */
export function assignmentsOf<E>(entity: new () => E, p: SqlParams, changes: Partial<E>): string {
  const set = given(entity, changes);
  if (!set.length) throw new Error(`an UPDATE of ${entity.name} that sets nothing`);
  return set.map((s) => `${s.column.name} = ${p.add(s.value)}`).join(', ');
}
