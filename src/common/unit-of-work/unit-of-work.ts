import { Global, Injectable, Module } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import { AuditTrail } from '../audit/audit-trail.service';
import { EventOutbox } from '../events/event-outbox';
import { Change, Origin, Queryable } from './change';

/**
 * Parameters up to which a one-statement change is prepared. Its pieces send their rows as one JSON
 * parameter each, so its text does not vary with the number of rows; a statement with many parameters
 * would have a text per row count, and the server would keep each.
 */
const PREPARED_MAX_PARAMS = 100;
let prepared = true;

/** The `transaction` change whose work runs in the current async context (see `UnitOfWork.holding`). */
const running = new AsyncLocalStorage<Change>();

/** Whether small one-statement changes are named prepared statements (`DB_PREPARED_STATEMENTS`). */
export function usePreparedStatements(on: boolean): void {
  prepared = on;
}

/**
 * Opens every write of the service: one `Change` per write, handed to the work as a parameter.
 *
 * `transaction(origin, work)` runs the work in a transaction; `statement(origin, work)` gathers its
 * writes and sends them as one statement once it has returned (see `ChangeMode`). Either way, as the
 * work returns and before anything commits, the runner adds what the change collected: its audit rows
 * (attributed to the origin's actor), its webhook events (the outbox), and, when the origin carries an
 * idempotency claim, the record of the response (the work's result). A failure anywhere rolls all of it
 * back. Once committed, the change's `afterCommit` work runs, in order.
 *
 * A handler that must commit before it calls a vendor (orchestration) opens several changes, one after
 * the other; it hands the idempotency claim to none of them, and the idempotency interceptor records the
 * response after the handler.
 */
@Injectable()
export class UnitOfWork {
  constructor(
    private readonly dataSource: DataSource,
    private readonly trail: AuditTrail,
    private readonly outbox: EventOutbox,
  ) {}

  /** Reads outside any change run here (the pool). */
  get reader(): Queryable {
    return this.dataSource;
  }

  /**
   * The `transaction` change whose work is running here (in this async context), if any. It holds a
   * connection of the pool until it ends, on the embedded database the only one: a read through `reader`
   * from its work would wait for that connection for ever (TenantKeysService refuses one).
   */
  get holding(): Change | undefined {
    return running.getStore();
  }

  async transaction<T>(origin: Origin, work: (change: Change) => Promise<T>): Promise<T> {
    let change: Change | undefined;
    let result: T;
    try {
      result = await this.dataSource.transaction(async (manager) => {
        const opened = new Change(origin, 'transaction', manager, (sql, params, prepare) =>
          this.inTransaction(manager, sql, params, prepare),
        );
        change = opened;
        const value = await running.run(opened, () => work(opened));
        await this.complete(opened, value);
        await opened.flush();
        return value;
      });
    } catch (error) {
      for (const fn of change?.rolledBack ?? []) fn();
      throw error;
    }
    for (const fn of change!.committed) fn();
    return result;
  }

  async statement<T>(origin: Origin, work: (change: Change) => Promise<T>): Promise<T> {
    const change = new Change(origin, 'statement', undefined, (sql, params, prepare) =>
      this.oneStatement(sql, params, prepare),
    );
    let value: T;
    try {
      value = await work(change);
      await this.complete(change, value);
      await change.flush();
    } catch (error) {
      for (const fn of change.rolledBack) fn();
      throw error;
    }
    for (const fn of change.committed) fn();
    return value;
  }

  /** What every change records besides its own writes, added as it ends. */
  private async complete(change: Change, result: unknown): Promise<void> {
    await this.trail.writeChange(change);
    if (change.events.length) await this.outbox.record(change, change.events);
    await change.origin.idempotency?.record(change, result);
  }

  /**
   * Sends a one-statement change as a named prepared statement (named by a digest of its text, so one
   * text has one name): each pooled connection parses it once, and PostgreSQL can keep its plan, where
   * parsing and planning the CTEs anew took two thirds of its time per tokenize of one card. Not a
   * statement that also reads tables that grow (`prepare` false: the card enumeration guard's counts and
   * stored tokens): a plan kept from when they were small (an index scan of all a tenant's tokens,
   * filtered, for each number; 0.5 s a statement of 100 cards) would outlive their growth.
   */
  private async oneStatement(
    sql: string,
    params: unknown[],
    prepare: boolean,
  ): Promise<Record<string, unknown>[]> {
    const pool = (this.dataSource.driver as { master?: Pool }).master;
    if (!prepare || !prepared || !pool || params.length > PREPARED_MAX_PARAMS)
      return this.dataSource.query<Record<string, unknown>[]>(sql, params);
    return (
      await pool.query<Record<string, unknown>>({ name: statementName(sql), text: sql, values: params })
    ).rows;
  }

  /**
   * SQL in a change's transaction. Its writes (`prepare`: the one statement of data-modifying CTEs it
   * sends before COMMIT) are prepared as a one-statement change's are, on the transaction's connection;
   * its reads are planned afresh each time: a prepared read's plan, chosen once while a table was small
   * (an index scan of all a tenant's tokens, filtered), would be kept as the table grows, where a fresh
   * plan follows its size. Answers what TypeORM's `query` answers (rows; `[rows, count]` for UPDATE and
   * DELETE) and fails as it fails (`QueryFailedError` around pg's error), so repositories cannot tell
   * the two apart.
   */
  private async inTransaction(
    manager: EntityManager,
    sql: string,
    params: unknown[],
    prepare: boolean,
  ): Promise<unknown[]> {
    const client = (manager.queryRunner as { databaseConnection?: PoolClient } | undefined)
      ?.databaseConnection;
    const pool = (this.dataSource.driver as { master?: Pool }).master;
    if (!prepare || !prepared || !pool || !client || params.length > PREPARED_MAX_PARAMS)
      return manager.query<unknown[]>(sql, params);
    try {
      const raw = await client.query<Record<string, unknown>>({
        name: statementName(sql),
        text: sql,
        values: params,
      });
      return raw.command === 'UPDATE' || raw.command === 'DELETE' ? [raw.rows, raw.rowCount] : raw.rows;
    } catch (error) {
      throw new QueryFailedError(sql, params, error as Error);
    }
  }
}

/** A prepared statement's name, from its text: one text has one name on every connection. */
const statementName = (sql: string): string =>
  `one_${createHash('sha256').update(sql).digest('base64url').slice(0, 40)}`;

/** The runner, for every module (the HTTP application and the command line). */
@Global()
@Module({ providers: [UnitOfWork], exports: [UnitOfWork] })
export class UnitOfWorkModule {}
