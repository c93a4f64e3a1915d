import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { permissionsFor } from '../src/common/auth/permissions';
import { runMigrations } from '../src/database/data-source';
import { FlowRules1795000000029 } from '../src/database/migrations/1795000000029-FlowRules';
import { TransactionAttempts1795000000030 } from '../src/database/migrations/1795000000030-TransactionAttempts';
import {
  beforeMigration,
  MigrationUnderTest,
  permissionsOf,
  seedGrantApplications,
} from './support/migrations';

const T = '0c000000-0000-4000-8000-000000000000';
const BOOTSTRAP = '0c000000-0000-4000-8000-0000000000b1';
const MADE_BY_API = '0c000000-0000-4000-8000-0000000000b2';
const PRIVATE = '0c000000-0000-4000-8000-0000000000b3';
const CONNECTION = '0c000000-0000-4000-8000-0000000000c1';
const FLOWS = ['orchestration:flows:read', 'orchestration:flows:update'];

/**
 * Migration 29 (docs/routing.md): the routing rules' table, `orchestration:flows:*` granted to the
 * bootstrap management application only, and a transaction's connection made optional (a rule's decline
 * has none). down() takes all of it back.
 */
describe('migration FlowRules1795000000029', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;

  beforeAll(async () => {
    migration = await beforeMigration(FlowRules1795000000029, 'vault_test_flow_rules', (old) =>
      seedGrantApplications(
        old,
        { tenant: T, bootstrap: BOOTSTRAP, madeByApi: MADE_BY_API, private: PRIVATE },
        'orchestration:flows:',
        ['log:read'],
      ),
    );
    db = migration.db;
  });
  afterAll(async () => {
    await migration?.close();
  });

  const nullable = async () =>
    (
      await db.query<{ is_nullable: string }[]>(
        `SELECT is_nullable FROM information_schema.columns WHERE table_name = 'transactions' AND column_name = 'connection_id'`,
      )
    )[0].is_nullable;

  it('creates flow_rules, grants orchestration:flows:* to the bootstrap application only, and makes connection_id optional', async () => {
    expect(await nullable()).toBe('NO');
    expect(await runMigrations(db)).toEqual([new FlowRules1795000000029().name]);
    expect((await db.query(`SELECT to_regclass('flow_rules') AS t`))[0].t).toBe('flow_rules');
    expect([...(await permissionsOf(db, BOOTSTRAP))].sort()).toEqual(
      [...permissionsFor('management')].sort(),
    );
    expect(await permissionsOf(db, MADE_BY_API)).toEqual(['log:read']);
    expect(await permissionsOf(db, PRIVATE)).toEqual(['token:read']);
    expect(await nullable()).toBe('YES');
  });

  it('positions are unique per tenant and action, checked at commit (a reorder may pass through duplicates)', async () => {
    const insert = (id: string, position: number) =>
      db.query(
        `INSERT INTO flow_rules (tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at)
         VALUES ($1, $2, 'card-transaction', 'route-transaction', 'r', $3, '[]', '{"type":"list","result":[]}', now(), now())`,
        [T, id, position],
      );
    await insert('0c000000-0000-4000-8000-0000000000e1', 1);
    await expect(insert('0c000000-0000-4000-8000-0000000000e2', 1)).rejects.toThrow(
      /flow_rules_position_key/,
    );
    await db.transaction(async (m) => {
      await m.query(
        `INSERT INTO flow_rules (tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at)
         VALUES ($1, $2, 'card-transaction', 'route-transaction', 'r', 1, '[]', '{"type":"list","result":[]}', now(), now())`,
        [T, '0c000000-0000-4000-8000-0000000000e3'],
      );
      await m.query(`UPDATE flow_rules SET position = 2 WHERE id = $1`, [
        '0c000000-0000-4000-8000-0000000000e1',
      ]);
    });
    await db.query(`DELETE FROM flow_rules`);
  });

  it('down() takes the grant back, drops the table and makes connection_id required again', async () => {
    await db.undoLastMigration({ transaction: 'all' });
    expect((await permissionsOf(db, BOOTSTRAP)).filter((p) => FLOWS.includes(p))).toEqual([]);
    expect((await db.query(`SELECT to_regclass('flow_rules') AS t`))[0].t).toBeNull();
    expect(await nullable()).toBe('NO');
  });
});

/**
 * Migration 30: every transaction made before has one attempt, at its connection, with the outcome its
 * status shows (an authorization still unanswered stays `processing`; one that went on to a capture
 * `succeeded`).
 */
describe('migration TransactionAttempts1795000000030', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;
  const TRANSACTIONS: [string, string, string | null][] = [
    ['0c000000-0000-4000-8000-0000000000a1', 'processing', 'authorize'],
    ['0c000000-0000-4000-8000-0000000000a2', 'processing', 'capture'],
    ['0c000000-0000-4000-8000-0000000000a3', 'authorization_declined', null],
    ['0c000000-0000-4000-8000-0000000000a4', 'authorization_failed', null],
    ['0c000000-0000-4000-8000-0000000000a5', 'capture_succeeded', null],
    ['0c000000-0000-4000-8000-0000000000a6', 'buyer_approval_pending', null],
  ];

  beforeAll(async () => {
    migration = await beforeMigration(
      TransactionAttempts1795000000030,
      'vault_test_attempts',
      async (old) => {
        await old.query(`INSERT INTO tenants (id, name) VALUES ($1, 't')`, [T]);
        await old.query(
          `INSERT INTO connections (id, tenant_id, formula_id, method, display_name, fields, accepted_countries,
                                  accepted_currencies, active, status, three_d_secure_enabled, created_at, updated_at)
         VALUES ($1, $2, 'stripe-card', 'card', 'Stripe', '[]', '{US}', '{USD}', true, 'available', false, now(), now())`,
          [CONNECTION, T],
        );
        for (const [id, status, pending] of TRANSACTIONS)
          await old.query(
            `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, pending_operation, intent, amount,
                                     currency, payment_source, merchant_initiated, is_subsequent_payment, payment_method,
                                     error_code, created_at, updated_at)
           VALUES ($1, $2, $3, 'tok', $4, $5, 'authorize', 100, 'USD', 'ecommerce', false, false, '{}',
                   $6, now(), now())`,
            [
              id,
              T,
              CONNECTION,
              status,
              pending,
              status === 'authorization_declined' ? 'insufficient_funds' : null,
            ],
          );
        // A transaction a rule declined has no connection, and gets no attempt.
        await old.query(
          `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, intent, amount, currency,
                                   payment_source, merchant_initiated, is_subsequent_payment, payment_method,
                                   error_code, created_at, updated_at)
         VALUES ('0c000000-0000-4000-8000-0000000000a7', $1, NULL, 'tok', 'authorization_declined', 'authorize', 100,
                 'USD', 'ecommerce', false, false, '{}', 'declined_by_rule', now(), now())`,
          [T],
        );
      },
    );
    db = migration.db;
  });
  afterAll(async () => {
    await migration?.close();
  });

  it('gives each transaction with a connection its first attempt, as its status shows', async () => {
    expect(await runMigrations(db)).toEqual([new TransactionAttempts1795000000030().name]);
    const rows: {
      transaction_id: string;
      number: number;
      connection_id: string;
      status: string;
      error_code: string | null;
    }[] = await db.query(
      `SELECT transaction_id, number, connection_id, status, error_code FROM transaction_attempts ORDER BY transaction_id`,
    );
    expect(
      rows.map((r) => [r.transaction_id.slice(-2), r.number, r.connection_id, r.status, r.error_code]),
    ).toEqual([
      ['a1', 1, CONNECTION, 'processing', null],
      ['a2', 1, CONNECTION, 'succeeded', null],
      ['a3', 1, CONNECTION, 'declined', 'insufficient_funds'],
      ['a4', 1, CONNECTION, 'failed', null],
      ['a5', 1, CONNECTION, 'succeeded', null],
      ['a6', 1, CONNECTION, 'buyer_approval_pending', null],
    ]);
    const attempts: { attempt: number }[] = await db.query(`SELECT DISTINCT attempt FROM transactions`);
    expect(attempts).toEqual([{ attempt: 1 }]);
  });

  it('down() drops the attempts and the column', async () => {
    await db.undoLastMigration({ transaction: 'all' });
    expect((await db.query(`SELECT to_regclass('transaction_attempts') AS t`))[0].t).toBeNull();
    const columns: unknown[] = await db.query(
      `SELECT 1 FROM information_schema.columns WHERE table_name = 'transactions' AND column_name = 'attempt'`,
    );
    expect(columns).toEqual([]);
  });
});
