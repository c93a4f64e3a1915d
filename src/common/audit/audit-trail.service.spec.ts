import { StoppedClock } from '../../../test/support/stopped-clock';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import type { EventOutbox } from '../events/event-outbox';
import type { Origin } from '../unit-of-work/change';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { AuditLogsRepository } from './audit-logs.repository';
import { AuditTrail } from './audit-trail.service';
import type { AuditEntry } from './audit.types';

/**
 * The audit trail on the real SQL: the rows a change collected are written with it, attributed to its
 * actor, at the clock's time, in its transaction or its one statement; a change that fails leaves none.
 */
let db: ServiceDatabase;
let work: UnitOfWork;
const clock = new StoppedClock();
let tenant: string;

const APP = '00000000-0000-4000-8000-0000000000a1';
const SESSION = '00000000-0000-4000-a000-0000000000b1';

beforeAll(async () => {
  db = await openServiceDatabase();
  // No change of these specs emits an event: the outbox is never asked.
  work = new UnitOfWork(db.dataSource, new AuditTrail(new AuditLogsRepository(), clock), {} as EventOutbox);
  tenant = await db.newTenant();
});
afterAll(() => db.close());

interface Row {
  tenant_id: string;
  actor_id: string | null;
  actor_type: string;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  token_type: string | null;
  created_at: Date;
}

/** The rows written since `mark` (a `pos`), in order. */
const since = (mark: string) =>
  db.rows<Row>(
    `SELECT tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, token_type, created_at
       FROM audit_logs WHERE pos > $1 ORDER BY pos`,
    [mark],
  );
const mark = async () =>
  (await db.rows<{ pos: string }>('SELECT coalesce(max(pos), 0)::text AS pos FROM audit_logs'))[0].pos;

const entry = (over: Partial<AuditEntry> = {}): AuditEntry => ({
  entityType: 'application',
  entityId: APP,
  operation: 'update',
  message: 'Application updated',
  ...over,
});

async function written(
  origin: Origin,
  entries: AuditEntry[],
  mode: 'transaction' | 'statement' = 'transaction',
) {
  const from = await mark();
  await work[mode](origin, async (change) => change.audit(...entries));
  return since(from);
}

it("writes each entry attributed to the change's application, at the clock's time", async () => {
  const rows = await written({ actor: { tenantId: tenant, applicationId: APP } }, [
    entry(),
    entry({ entityType: 'webhook', entityId: null, operation: 'delete', message: 'Webhook deleted' }),
  ]);
  expect(rows).toEqual([
    {
      tenant_id: tenant,
      actor_id: APP,
      actor_type: 'application',
      entity_type: 'application',
      entity_id: APP,
      operation: 'update',
      message: 'Application updated',
      token_type: null,
      created_at: clock.now(),
    },
    {
      tenant_id: tenant,
      actor_id: APP,
      actor_type: 'application',
      entity_type: 'webhook',
      entity_id: null,
      operation: 'delete',
      message: 'Webhook deleted',
      token_type: null,
      created_at: clock.now(),
    },
  ]);
});

it('names the session of a session key in the message', async () => {
  const [row] = await written({ actor: { tenantId: tenant, applicationId: APP, sessionId: SESSION } }, [
    entry(),
  ]);
  expect(row).toMatchObject({ actor_id: APP, message: `Application updated (session ${SESSION})` });
});

it.each([
  [{ system: true }, 'system'],
  [{ anonymous: true }, 'anonymous'],
  [{}, 'buyer'],
])('attributes a change without an application (%j) to actor type %s', async (who, actorType) => {
  const [row] = await written({ actor: { tenantId: tenant, applicationId: null, ...who } }, [entry()]);
  expect(row).toMatchObject({ actor_id: null, actor_type: actorType });
});

it("keeps a token's type on the rows of tokens only", async () => {
  const rows = await written({ actor: { tenantId: tenant, applicationId: APP } }, [
    entry({
      entityType: 'token',
      entityId: 'tok_1',
      operation: 'create',
      message: 'Token created',
      tokenType: 'card',
    }),
    entry({ tokenType: 'card' }),
  ]);
  expect(rows.map((r) => r.token_type)).toEqual(['card', null]);
});

it("writes the rows with a one-statement change's own statement", async () => {
  const rows = await written(
    { actor: { tenantId: tenant, applicationId: APP } },
    [entry(), entry()],
    'statement',
  );
  expect(rows).toHaveLength(2);
});

it('writes nothing for a change without entries, or without an actor', async () => {
  expect(await written({ actor: { tenantId: tenant, applicationId: APP } }, [])).toEqual([]);
  expect(await written({}, [])).toEqual([]);
});

it('leaves no row of a change that fails', async () => {
  const from = await mark();
  const failed = work.transaction({ actor: { tenantId: tenant, applicationId: APP } }, async (change) => {
    change.audit(entry());
    await change.query('UPDATE tenants SET name = $2 WHERE id = $1', [tenant, 'renamed']);
    throw new Error('the write failed');
  });
  await expect(failed).rejects.toThrow('the write failed');
  expect(await since(from)).toEqual([]);
  expect(await db.rows('SELECT name FROM tenants WHERE id = $1', [tenant])).toEqual([{ name: 'tenant' }]);
});
