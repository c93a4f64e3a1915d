import { type FindOptionsSelect, getMetadataArgsStorage } from 'typeorm';
import type { EntityClass } from './data-source';
import { insertExpressions, multiRowInsert } from './sql';

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

/** A TypeORM `select` of an entity's columns, all but `except` (for a find that must leave some out). */
export function selectOf<E>(entity: new () => E, except: readonly ColumnOf<E>[] = []): FindOptionsSelect<E> {
  const select = Object.fromEntries(chosen(entity, { except }).map((c) => [c.property, true]));
  return select as FindOptionsSelect<E>;
}

/** An entity TypeORM loaded, as the row raw SQL would answer (all columns but `except`, which it did not load). */
export function rowFrom<E, K extends ColumnOf<E> = never>(
  entity: new () => E,
  loaded: E,
  except: readonly K[] = [],
): Omit<RowOf<E>, K> {
  const values = loaded as Record<string, unknown>;
  const row = Object.fromEntries(chosen(entity, { except }).map((c) => [c.name, values[c.property]]));
  return row as Omit<RowOf<E>, K>;
}

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
