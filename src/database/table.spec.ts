import 'reflect-metadata';
import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import {
  columnNamesOf,
  columnsOf,
  insertOf,
  insertSql,
  recordsetOf,
  answeredRows,
  assignmentsOf,
  entitiesOf,
  insertEntity,
  queryRows,
  rowsOf,
  select,
  type RowOf,
  type SnakeCase,
  snakeCase,
  tableNameOf,
  tableOf,
} from './table';
import { SqlParams } from './sql';

@Entity({ name: 'widgets' })
class WidgetEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'three_d_secure', type: 'jsonb', nullable: true })
  threeDSecure: object | null;

  @Column({ name: 'sealed_parts', type: 'bytea', array: true })
  sealedParts: Buffer[];

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

@Entity({ name: 'misnamed' })
class MisnamedEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'created', type: 'timestamptz' })
  createdAt: Date;
}

@Entity({ name: 'untyped' })
class UntypedEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column()
  name: string;
}

@Entity({ name: 'dated' })
class DatedEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

class NotAnEntity {
  id: string;
}

/** Compiles only when A and B are the same type. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const same = <A, B>(proof: Same<A, B>) => proof;

describe('table helpers', () => {
  it('converts camelCase to snake_case, in the type and at run time alike', () => {
    same<SnakeCase<'createdAt'>, 'created_at'>(true);
    same<SnakeCase<'threeDSecure'>, 'three_d_secure'>(true);
    same<SnakeCase<'id'>, 'id'>(true);
    same<SnakeCase<'line2Address'>, 'line2_address'>(true);
    expect(['createdAt', 'threeDSecure', 'id', 'line2Address'].map(snakeCase)).toEqual([
      'created_at',
      'three_d_secure',
      'id',
      'line2_address',
    ]);
  });

  it('types a row with the column names and the property types', () => {
    same<
      RowOf<WidgetEntity>,
      {
        tenant_id: string;
        id: string;
        currency: string;
        three_d_secure: object | null;
        sealed_parts: Buffer[];
        created_at: Date;
      }
    >(true);
    // The run-time names are the type's keys.
    const row: Record<keyof RowOf<WidgetEntity>, unknown> = {
      tenant_id: 1,
      id: 1,
      currency: 1,
      three_d_secure: 1,
      sealed_parts: 1,
      created_at: 1,
    };
    expect(columnNamesOf(WidgetEntity)).toEqual(Object.keys(row));
  });

  it('derives the table name, the column list and the record definition', () => {
    expect(tableNameOf(WidgetEntity)).toBe('widgets');
    expect(columnsOf(WidgetEntity)).toBe('tenant_id, id, currency, three_d_secure, sealed_parts, created_at');
    expect(columnsOf(WidgetEntity, 't')).toBe(
      't.tenant_id, t.id, t.currency, t.three_d_secure, t.sealed_parts, t.created_at',
    );
    expect(recordsetOf(WidgetEntity)).toBe(
      'tenant_id uuid, id uuid, currency char(3), three_d_secure jsonb, sealed_parts bytea[], created_at timestamptz',
    );
  });

  it('leaves out or keeps only named columns, in table order', () => {
    expect(columnsOf(WidgetEntity, 'w', { except: ['sealed_parts', 'currency'] })).toBe(
      'w.tenant_id, w.id, w.three_d_secure, w.created_at',
    );
    expect(columnsOf(WidgetEntity, undefined, { only: ['created_at', 'id'] })).toBe('id, created_at');
    expect(recordsetOf(WidgetEntity, { only: ['id', 'sealed_parts'] })).toBe('id uuid, sealed_parts bytea[]');
    expect(() => columnsOf(WidgetEntity, undefined, { except: ['nope' as 'id'] })).toThrow(
      'WidgetEntity has no column nope',
    );
  });

  it('describes nullability and primary keys', () => {
    expect(tableOf(WidgetEntity).columns.map((c) => [c.name, c.primary, c.nullable])).toEqual([
      ['tenant_id', true, false],
      ['id', true, false],
      ['currency', false, false],
      ['three_d_secure', false, true],
      ['sealed_parts', false, false],
      ['created_at', false, false],
    ]);
  });

  it('fails loudly on an entity whose column names RowOf would get wrong', () => {
    expect(() => columnsOf(MisnamedEntity)).toThrow(
      'MisnamedEntity.createdAt: column "created" is not "created_at", the snake_case of its property',
    );
  });

  it('fails on a column without an explicit SQL type, a special column, and a class that is no entity', () => {
    expect(() => columnsOf(UntypedEntity)).toThrow(
      "UntypedEntity.name: give the column's SQL type as a string",
    );
    expect(() => columnsOf(DatedEntity)).toThrow('DatedEntity.createdAt: a createDate column');
    expect(() => columnsOf(NotAnEntity)).toThrow('NotAnEntity is not an entity');
  });
});

describe('the typed helpers', () => {
  /** A runner that keeps what it was sent and answers as TypeORM does. */
  const runner = (answer: unknown) => {
    const sent: { sql: string; params?: unknown[] }[] = [];
    return {
      sent,
      query: (sql: string, params?: unknown[]) => {
        sent.push({ sql, params });
        return Promise.resolve(answer);
      },
    };
  };

  it('selects the rows of an entity with the column list its type comes from', async () => {
    const db = runner([{ id: 'w', currency: 'EUR' }]);
    const selection = rowsOf(WidgetEntity, { alias: 'w', only: ['id', 'currency'] });
    const found: { id: string; currency: string }[] = await select(
      db,
      selection,
      (columns) => `SELECT ${columns} FROM widgets w WHERE w.id = $1`,
      ['w'],
    );
    expect(found).toEqual([{ id: 'w', currency: 'EUR' }]);
    expect(db.sent).toEqual([
      { sql: 'SELECT w.id, w.currency FROM widgets w WHERE w.id = $1', params: ['w'] },
    ]);
  });

  it('selects the columns under the properties of the entity, all but those left out', () => {
    expect(entitiesOf(WidgetEntity, { except: ['sealed_parts'] }).sql).toBe(
      'tenant_id AS "tenantId", id, currency, three_d_secure AS "threeDSecure", created_at AS "createdAt"',
    );
  });

  it('answers the rows of an UPDATE or DELETE, which TypeORM answers with their count', async () => {
    const updated = [{ id: 'w' }];
    expect(await queryRows(runner([updated, 1]), 'UPDATE widgets SET currency = $1 RETURNING id')).toEqual(
      updated,
    );
    expect(answeredRows([{ id: 'w' }, { id: 'v' }])).toEqual([{ id: 'w' }, { id: 'v' }]);
    expect(answeredRows([[], 0])).toEqual([]);
  });

  it('inserts the properties an entity object sets, JSON columns as JSON, the others by default', () => {
    expect(
      insertEntity(WidgetEntity, {
        tenantId: 't',
        id: 'w',
        threeDSecure: { version: '2' },
        currency: undefined,
      }),
    ).toEqual({
      sql: 'INSERT INTO widgets (tenant_id, id, three_d_secure) VALUES ($1, $2, $3)',
      params: ['t', 'w', '{"version":"2"}'],
    });
    // A property that is no column is left out, as TypeORM's insert left it.
    expect(insertEntity(WidgetEntity, { id: 'w', nope: 1 } as never).sql).toBe(
      'INSERT INTO widgets (id) VALUES ($1)',
    );
  });

  it('assigns the properties an UPDATE changes, after the parameters already taken', () => {
    const p = new SqlParams();
    p.add('t');
    expect(assignmentsOf(WidgetEntity, p, { currency: 'USD', threeDSecure: null })).toBe(
      'currency = $2, three_d_secure = $3',
    );
    expect(p.values).toEqual(['t', 'USD', null]);
    expect(() => assignmentsOf(WidgetEntity, p, {})).toThrow('an UPDATE of WidgetEntity that sets nothing');
  });
});

describe('insertOf', () => {
  it('inserts the given columns of one row, in the order given', () => {
    expect(insertOf(WidgetEntity, { id: 'w', tenant_id: 't', currency: 'EUR' })).toEqual({
      sql: 'INSERT INTO widgets (id, tenant_id, currency) VALUES ($1, $2, $3)',
      params: ['w', 't', 'EUR'],
    });
    expect(() => insertOf(WidgetEntity, { nope: 1 } as never)).toThrow('WidgetEntity has no column nope');
  });
});

describe('insertSql', () => {
  it('writes each column with the SQL of its value', () => {
    expect(insertSql(WidgetEntity, { id: '$1', currency: `'EUR'`, created_at: 'now()' })).toBe(
      `INSERT INTO widgets (id, currency, created_at) VALUES ($1, 'EUR', now())`,
    );
  });
});
