import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsServiceManager } from 'nestjs-cls';
import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import { Change } from '../unit-of-work/change';
import { PieceBuilder, PieceOptions, WriteBatch } from '../unit-of-work/write-batch';

/**
 * Explicit transactions. A service method that writes declares its transaction with `@Transactional()`:
 * called outside a transaction it opens one (the library's TransactionHost) and commits when it returns;
 * called inside one it joins it. Two things attach to the transaction a method opens:
 *
 * - the request's edge work (`onRequestCommit`): the audit and idempotency interceptors register what
 *   must commit with the change (its audit rows, its idempotency record). The first method that opens a
 *   transaction in a request runs it, with its result, just before it commits; the interceptors open
 *   no transaction. A handler that commits several transactions of its own (orchestration, which must
 *   commit before it calls a processor) opens them with `TransactionHost.withTransaction`, which runs no
 *   edge work: the interceptors then write theirs after the handler, as their own transaction.
 * - `afterCommit(fn)`: work that must see the change committed (a background verification, a nudge to
 *   the webhook delivery worker): it runs once the transaction has committed, never if it rolled back.
 *
 * A handler or job that commits several transactions of its own opens each with `inTransaction(work)`:
 * a transaction with `afterCommit` but no edge work (a bare `TransactionHost.withTransaction` has
 * neither, and `afterCommit` refuses to run inside it).
 *
 * `@OneStatement()` is `@Transactional()` for a method whose writes need no answer before the end (a
 * tokenize of generated ids): they go through `deferredWrite`, and with the request's edge work (when all
 * of it is deferrable too: audit rows, not an idempotency record, which can veto the commit) they are
 * sent as one statement of data-modifying CTEs, atomic without BEGIN and COMMIT (`WriteBatch`). Such a
 * method must write nothing else: a plain query inside it would commit by itself.
 */

type EdgeWork = (result: unknown) => Promise<void>;

interface RequestEdge {
  work: { fn: EdgeWork; deferrable: boolean }[];
  /** The result the edge work ran with, once a transaction ran it. */
  ran?: { result: unknown };
}

interface Frame {
  afterCommit: (() => void)[];
}

const EDGE_KEY = 'transactional:edge';
const FRAME_KEY = 'transactional:frame';
const BATCH_KEY = 'transactional:batch';

function cls() {
  const service = ClsServiceManager.getClsService();
  return service.isActive() ? service : undefined;
}

/**
 * Registers work that must commit with the request's change. Answers a handle that tells, after the
 * handler, whether a transaction ran it (and with which result). `deferrable`: the work writes only
 * through `deferredWrite` and reads nothing, so it can join a `@OneStatement()` method's statement.
 */
export function onRequestCommit(work: EdgeWork, options: { deferrable?: boolean } = {}): RequestEdge {
  const store = cls();
  if (!store) throw new Error('onRequestCommit needs a request context');
  let edge = store.get<RequestEdge | undefined>(EDGE_KEY);
  if (!edge || edge.ran) {
    edge = { work: [] };
    store.set(EDGE_KEY, edge);
  }
  edge.work.push({ fn: work, deferrable: options.deferrable ?? false });
  return edge;
}

/**
 * A write whose result nothing needs before the request ends. Inside a `@OneStatement()` method it joins
 * the method's one statement, and `then` gets its result once that has run; anywhere else it runs now,
 * in the current transaction if there is one. Where its `refuse` condition holds, the write fails (the
 * whole statement with it) with the error `refused` makes.
 */
export async function deferredWrite(build: PieceBuilder, options: PieceOptions = {}): Promise<void> {
  const batch = cls()?.get<WriteBatch | undefined>(BATCH_KEY);
  if (batch) return batch.add(build, options);
  const value = await WriteBatch.runOne(query, build, options.refused);
  options.then?.(value);
}

/** True inside a `@OneStatement()` method gathering its statement (no transaction is open then). */
export function inOneStatement(): boolean {
  return !!cls()?.get<WriteBatch | undefined>(BATCH_KEY);
}

const query = (sql: string, params: unknown[]): Promise<Record<string, unknown>[]> =>
  TransactionHost.getInstance<TransactionalAdapterTypeOrm>().tx.query(sql, params);

/**
 * Parameters up to which a one-statement write is prepared. Its pieces send their rows as one JSON
 * parameter each, so its text does not vary with the number of rows; a statement with many parameters
 * would have a text per row count, and the server would keep each.
 */
const PREPARED_MAX_PARAMS = 100;
let prepared = true;

/** Whether small one-statement writes are named prepared statements (`DB_PREPARED_STATEMENTS`). */
export function usePreparedStatements(on: boolean): void {
  prepared = on;
}

/**
 * Runs a `@OneStatement()` method's statement outside any transaction, as a named prepared statement
 * (named by a digest of its text, so one text has one name): each pooled connection parses it once, and
 * PostgreSQL can keep its plan, where parsing and planning the CTEs anew took two thirds of its time per
 * tokenize of one card.
 */
const oneStatementQuery = async (sql: string, params: unknown[]): Promise<Record<string, unknown>[]> => {
  const manager = TransactionHost.getInstance<TransactionalAdapterTypeOrm>().tx;
  const pool = (manager.connection.driver as { master?: Pool }).master;
  if (!prepared || !pool || params.length > PREPARED_MAX_PARAMS) return manager.query(sql, params);
  const name = `one_${createHash('sha256').update(sql).digest('base64url').slice(0, 40)}`;
  return (await pool.query<Record<string, unknown>>({ name, text: sql, values: params })).rows;
};

/** Runs `fn` once the current transaction has committed; outside a transaction, at once. */
export function afterCommit(fn: () => void): void {
  const frame = cls()?.get<Frame | undefined>(FRAME_KEY);
  if (frame) frame.afterCommit.push(fn);
  else if (TransactionHost.getInstance().isTransactionActive())
    throw new Error('afterCommit needs a transaction opened by a @Transactional() method');
  else fn();
}

/**
 * Like `afterCommit` where a `@Transactional()` method or `inTransaction` opened the transaction, and
 * at once anywhere else (never an error): for observations such as metrics, which must not make a
 * write fail wherever it happens to be called from.
 */
export function whenCommitted(fn: () => void): void {
  const frame = cls()?.get<Frame | undefined>(FRAME_KEY);
  if (frame) frame.afterCommit.push(fn);
  else fn();
}

/** Runs the request's edge work inside the transaction; answers the edge if this call ran it. */
async function runEdge(result: unknown): Promise<RequestEdge | undefined> {
  const edge = cls()?.get<RequestEdge | undefined>(EDGE_KEY);
  if (!edge || edge.ran) return undefined;
  edge.ran = { result };
  for (const work of edge.work) await work.fn(result);
  return edge;
}

/**
 * Runs `work` in a transaction of its own (or in the current one, which it then joins) whose
 * `afterCommit` work runs once it has committed; it runs none of the request's edge work.
 */
export async function inTransaction<T>(work: () => Promise<T>): Promise<T> {
  const host = TransactionHost.getInstance();
  const store = cls();
  if (host.isTransactionActive() || !store) return host.withTransaction(work);
  const outer = store.get<Frame | undefined>(FRAME_KEY);
  const frame: Frame = { afterCommit: [] };
  store.set(FRAME_KEY, frame);
  let result: T;
  try {
    result = await host.withTransaction(work);
  } finally {
    store.set(FRAME_KEY, outer);
  }
  for (const fn of frame.afterCommit) fn();
  return result;
}

/** Declares that the method's writes are one transaction (see the top of this file). */
export function Transactional(): MethodDecorator {
  return (_target, _key, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as (...args: unknown[]) => Promise<unknown>;
    descriptor.value = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const host = TransactionHost.getInstance();
      if (host.isTransactionActive()) return original.apply(this, args);
      const store = cls();
      if (!store) return host.withTransaction(() => original.apply(this, args));
      if (store.get<WriteBatch | undefined>(BATCH_KEY))
        throw new Error('a @Transactional() method called inside a @OneStatement() method');
      // The request's audit rows and idempotency record went with an earlier transaction: this change
      // would commit without them. A handler writes through one top-level @Transactional() method.
      if (store.get<RequestEdge | undefined>(EDGE_KEY)?.ran)
        throw new Error('a second top-level @Transactional() write after the request recorded its outcome');
      const outer = store.get<Frame | undefined>(FRAME_KEY);
      const frame: Frame = { afterCommit: [] };
      store.set(FRAME_KEY, frame);
      let edge: RequestEdge | undefined;
      try {
        const result = await host.withTransaction(async () => {
          const value = await original.apply(this, args);
          edge = await runEdge(value);
          return value;
        });
        for (const fn of frame.afterCommit) fn();
        return result;
      } catch (error) {
        // Rolled back: the edge work did not commit either; whoever handles the error may retry it.
        if (edge) edge.ran = undefined;
        throw error;
      } finally {
        store.set(FRAME_KEY, outer);
      }
    };
    return descriptor;
  };
}

/**
 * Declares that the method's writes are one statement (see the top of this file). Falls back to
 * `@Transactional()` when a transaction is already open (it joins it) or when the request's edge work
 * cannot be deferred (an idempotency record).
 */
export function OneStatement(): MethodDecorator {
  return (target, key, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as (...args: unknown[]) => Promise<unknown>;
    const fallback = (Transactional()(target, key, { ...descriptor, value: original }) as PropertyDescriptor)
      .value as (...args: unknown[]) => Promise<unknown>;
    descriptor.value = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const store = cls();
      const edge = store?.get<RequestEdge | undefined>(EDGE_KEY);
      if (
        !store ||
        TransactionHost.getInstance().isTransactionActive() ||
        store.get<WriteBatch | undefined>(BATCH_KEY) ||
        edge?.ran ||
        edge?.work.some((work) => !work.deferrable)
      )
        return fallback.apply(this, args);
      const batch = new WriteBatch();
      const outer = store.get<Frame | undefined>(FRAME_KEY);
      const frame: Frame = { afterCommit: [] };
      store.set(FRAME_KEY, frame);
      store.set(BATCH_KEY, batch);
      let ran: RequestEdge | undefined;
      try {
        const value = await original.apply(this, args);
        ran = await runEdge(value);
        store.set(BATCH_KEY, undefined);
        await batch.run(oneStatementQuery);
        for (const fn of frame.afterCommit) fn();
        return value;
      } catch (error) {
        // Nothing was written: whoever handles the error may run the edge work again.
        if (ran) ran.ran = undefined;
        throw error;
      } finally {
        store.set(BATCH_KEY, undefined);
        store.set(FRAME_KEY, outer);
      }
    };
    return descriptor;
  };
}

/**
 * Transitional, for a module not yet converted to the unit of work that calls a converted service inside
 * its `@Transactional()`/`inTransaction` transaction: that transaction as a `Change`, so that the service
 * reads and writes in it (and the embedded database's one connection is not waited for twice). Undefined
 * outside a transaction. Audit rows and after-commit work added to it are dropped (a fingerprint the card
 * enumeration guard withholds there is not logged) until the caller opens changes of its own; this goes
 * with the rest of this file.
 */
export function currentChange(): Change | undefined {
  const host = TransactionHost.getInstance<TransactionalAdapterTypeOrm>();
  return host.isTransactionActive() ? new Change({}, 'transaction', host.tx) : undefined;
}
