import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { MasterKeyRing } from '../../common/crypto/master-keys';
import { HEARTBEAT_SECONDS, InstanceHeartbeatService, LIVE_SECONDS } from './instance-heartbeat.service';
import { InstancesRepository } from './instances.repository';

/**
 * The heartbeat on the real SQL: a server publishes itself and the master key versions it holds (never
 * the keys) in `instances`, refreshes its row every HEARTBEAT_SECONDS (the timer's callback is called
 * here, not waited for), clears rows long stale, and removes its own when it stops.
 */
let db: ServiceDatabase;
let instances: InstancesRepository;
const ring = new MasterKeyRing(
  [
    { version: 'v1', key: Buffer.alloc(32, 1) },
    { version: 'v2', key: Buffer.alloc(32, 2) },
  ],
  'heartbeat spec',
);

/** The interval the service set: its callback, called when a spec says, and its period. */
let tick: { beat: () => void; every: number; cleared: boolean };

beforeAll(async () => {
  db = await openServiceDatabase();
  instances = new InstancesRepository(db.dataSource);
});
afterAll(() => db.close());
beforeEach(() => {
  const handle = { unref: jest.fn() } as unknown as NodeJS.Timeout;
  jest.spyOn(global, 'setInterval').mockImplementation(((beat: () => void, every: number) => {
    tick = { beat, every, cleared: false };
    return handle;
  }) as typeof setInterval);
  jest.spyOn(global, 'clearInterval').mockImplementation((cleared) => {
    if (cleared === handle) tick.cleared = true;
  });
});
afterEach(() => jest.restoreAllMocks());

const rowOf = async (id: string) =>
  (
    await db.rows<{ hostname: string; pid: number; key_versions: string[]; seen_at: Date }>(
      'SELECT hostname, pid, key_versions, seen_at FROM instances WHERE id = $1',
      [id],
    )
  )[0];

/** Settles what a tick started (its beat runs in the background). */
async function afterBeat(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await db.rows('SELECT 1');
}

it('publishes this server and its key versions on start, and counts as live', async () => {
  const heartbeat = new InstanceHeartbeatService(instances, ring);
  await heartbeat.onApplicationBootstrap();
  expect(await rowOf(heartbeat.self.id)).toMatchObject({
    hostname: hostname(),
    pid: process.pid,
    key_versions: ['v1', 'v2'],
  });
  expect((await instances.live(LIVE_SECONDS)).map((i) => i.id)).toContain(heartbeat.self.id);
  expect(JSON.stringify(await db.rows('SELECT * FROM instances'))).not.toContain(
    Buffer.alloc(32, 1).toString('hex'),
  );
  await heartbeat.beforeApplicationShutdown();
});

it('refreshes its row every HEARTBEAT_SECONDS, recreating it if it was removed meanwhile', async () => {
  const heartbeat = new InstanceHeartbeatService(instances, ring);
  await heartbeat.onApplicationBootstrap();
  expect(tick.every).toBe(HEARTBEAT_SECONDS * 1000);
  await db.rows("UPDATE instances SET seen_at = now() - interval '1 minute' WHERE id = $1", [
    heartbeat.self.id,
  ]);
  expect((await instances.live(LIVE_SECONDS)).map((i) => i.id)).not.toContain(heartbeat.self.id);
  tick.beat();
  await afterBeat();
  expect((await instances.live(LIVE_SECONDS)).map((i) => i.id)).toContain(heartbeat.self.id);
  await instances.remove(heartbeat.self.id);
  tick.beat();
  await afterBeat();
  expect(await rowOf(heartbeat.self.id)).toBeDefined();
  await heartbeat.beforeApplicationShutdown();
});

it('clears the rows of servers gone for a day, and only those', async () => {
  const gone = randomUUID();
  const recent = randomUUID();
  await db.rows(
    `INSERT INTO instances (id, hostname, pid, key_versions, seen_at)
     VALUES ($1, 'old', 1, '{v1}', now() - interval '2 days'), ($2, 'recent', 2, '{v1}', now() - interval '1 hour')`,
    [gone, recent],
  );
  const heartbeat = new InstanceHeartbeatService(instances, ring);
  await heartbeat.onApplicationBootstrap();
  expect(await rowOf(gone)).toBeUndefined();
  expect(await rowOf(recent)).toBeDefined();
  await heartbeat.beforeApplicationShutdown();
});

it('keeps beating when a beat fails, saying so', async () => {
  const heartbeat = new InstanceHeartbeatService(instances, ring);
  await heartbeat.onApplicationBootstrap();
  const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  jest.spyOn(instances, 'beat').mockRejectedValueOnce(new Error('the database is away'));
  tick.beat();
  await afterBeat();
  expect(warn).toHaveBeenCalledWith('heartbeat failed: the database is away');
  tick.beat();
  await afterBeat();
  expect(await rowOf(heartbeat.self.id)).toBeDefined();
  await heartbeat.beforeApplicationShutdown();
});

it('stops beating and removes its row when the server stops; a failed removal does not stop the stop', async () => {
  const heartbeat = new InstanceHeartbeatService(instances, ring);
  await heartbeat.onApplicationBootstrap();
  await heartbeat.beforeApplicationShutdown();
  expect(tick.cleared).toBe(true);
  expect(await rowOf(heartbeat.self.id)).toBeUndefined();

  const other = new InstanceHeartbeatService(instances, ring);
  await other.onApplicationBootstrap();
  jest.spyOn(instances, 'remove').mockRejectedValueOnce(new Error('the database closed first'));
  await expect(other.beforeApplicationShutdown()).resolves.toBeUndefined();
});
