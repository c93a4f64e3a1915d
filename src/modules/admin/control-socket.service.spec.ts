import { Logger } from '@nestjs/common';
import { existsSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { duplexPair } from 'node:stream';
import type { DataSource } from 'typeorm';
import { auditStack } from '../../../test/support/audit-stack';
import {
  dataKeyRotationOn,
  tenantKeysUnder,
  tenantKeyStore,
  tenantsOn,
} from '../../../test/support/service-stacks';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { MasterKeyRing, type MasterKey } from '../../common/crypto/master-keys';
import { KeyCeremony } from '../../common/crypto/key-ceremony';
import { ProviderChange } from './provider-change';
import { AuditLogReadsRepository } from '../../common/audit/audit-log-reads.repository';
import { SystemLog } from '../../common/audit/system-log';
import { KeyRecords } from '../../common/crypto/key-records';
import { HsmKeys } from '../../common/crypto/pkcs11/hsm-keys';
import { KeyStatusReader } from '../../common/crypto/key-status';
import { MasterKeyChecksRepository } from '../../common/crypto/master-key-checks.repository';
import type { AppConfig } from '../../config/app-config';
import { AdminOperations } from './admin-operations';
import { ControlSocketService } from './control-socket.service';
import type { InstanceHeartbeatService } from './instance-heartbeat.service';
import { InstancesRepository } from './instances.repository';

/**
 * The control socket, without a socket: the server it would listen on is replaced (net.createServer), and
 * each connection is a pair of in-memory streams handed to the service's connection handler. Behind it,
 * the operator's operations run for real on the spec file's database: a tenant created, the master key
 * rotation and its refusals, the audit log verified. One JSON line in, one JSON line out.
 */
const V1: MasterKey = { version: 'v1', key: Buffer.alloc(32, 21) };
const V2: MasterKey = { version: 'v2', key: Buffer.alloc(32, 22) };

let db: ServiceDatabase;
let instances: InstancesRepository;
/** This server's heartbeat row id: its own row never refuses a rotation. */
const SELF = '00000000-0000-4000-8000-00000000c0de';

/** The operations of a server holding these master keys (the last one active). */
function operations(keys: MasterKey[]): AdminOperations {
  const ring = new MasterKeyRing(keys, 'control socket spec');
  const tenantKeys = tenantKeysUnder(db, keys);
  const { tenants } = tenantsOn(db, tenantKeys);
  const audit = auditStack(db, { ring: keys });
  return new AdminOperations(
    tenants,
    tenantKeys,
    audit.checkpointer,
    audit.verifier,
    audit.keys,
    ring,
    instances,
    new KeyCeremony(new KeyRecords(db.work, tenantKeyStore(db)), new MasterKeyChecksRepository()),
    new KeyStatusReader(db.work, new MasterKeyChecksRepository(), tenantKeyStore(db), ring, {
      KEY_PROVIDER: 'env',
    } as AppConfig),
    new HsmKeys(ring, new KeyRecords(db.work, tenantKeyStore(db)), new MasterKeyChecksRepository()),
    new ProviderChange(
      ring,
      db.work,
      new MasterKeyChecksRepository(),
      tenantKeys,
      audit.keys,
      { KEY_PROVIDER: 'env' } as AppConfig,
      new KeyRecords(db.work, tenantKeyStore(db)),
    ),
    new KeyRecords(db.work, tenantKeyStore(db)),
    new SystemLog(new AuditLogReadsRepository(db.dataSource)),
    dataKeyRotationOn(db, tenantKeys),
    { self: { id: SELF } } as InstanceHeartbeatService,
  );
}

/** The server the service would listen on: where it listens, and its connection handler. */
interface FakeServer {
  path?: string;
  handler?: (socket: net.Socket) => void;
  closed: boolean;
}

let server: FakeServer;
let published: (string | undefined)[];

/** A control socket service of an embedded server (or not), started. */
async function started(ops: AdminOperations, embedded = true): Promise<ControlSocketService> {
  published = [];
  const lock = { setControl: (path: string | undefined) => published.push(path) };
  const dataSource = { embedded: embedded ? { lock } : undefined } as unknown as DataSource;
  const service = new ControlSocketService(dataSource, ops);
  await service.onApplicationBootstrap();
  return service;
}

/** Sends raw text on a new connection; the reply line parsed, or undefined when the connection closes without one. */
async function exchange(...chunks: string[]): Promise<unknown> {
  const [client, served] = duplexPair();
  server.handler!(served as unknown as net.Socket);
  let reply = '';
  client.setEncoding('utf8');
  client.on('data', (text: string) => (reply += text));
  // Closed by the service: its end of the pair ends or is destroyed (a real peer would see either).
  const closed = new Promise<void>((resolve) => {
    client.on('end', resolve);
    served.on('close', resolve);
  });
  for (const chunk of chunks) client.write(chunk);
  await closed;
  if (!reply) return undefined;
  expect(reply.endsWith('\n')).toBe(true);
  return JSON.parse(reply);
}
const request = (body: unknown) => exchange(`${JSON.stringify(body)}\n`);

beforeAll(async () => {
  db = await openServiceDatabase();
  instances = new InstancesRepository(db.dataSource);
});
afterAll(() => db.close());
beforeEach(() => {
  server = { closed: false };
  jest.spyOn(net, 'createServer').mockImplementation(((handler: (socket: net.Socket) => void) => {
    server.handler = handler;
    return {
      once: () => undefined,
      listen: (path: string, listening: () => void) => {
        server.path = path;
        listening();
      },
      unref: () => undefined,
      close: (done: () => void) => {
        server.closed = true;
        done();
      },
    };
  }) as unknown as typeof net.createServer);
});
afterEach(() => jest.restoreAllMocks());

describe('the socket', () => {
  it('does not listen with a database server (the CLI opens it itself)', async () => {
    const service = await started(operations([V1]), false);
    expect(net.createServer).not.toHaveBeenCalled();
    await service.onApplicationShutdown();
  });

  it('listens in a private directory, publishes the path in the lock, and takes it all back on stop', async () => {
    const service = await started(operations([V1]));
    expect(server.path).toMatch(/control\.sock$/);
    expect(server.path!.startsWith(tmpdir())).toBe(true);
    expect(statSync(dirname(server.path!)).mode & 0o777).toBe(0o700);
    expect(published).toEqual([server.path]);
    await service.onApplicationShutdown();
    expect(published).toEqual([server.path, undefined]);
    expect(server.closed).toBe(true);
    expect(existsSync(dirname(server.path!))).toBe(false);
  });

  it('refuses a line that is not a known request, running nothing', async () => {
    const ops = operations([V1]);
    const run = jest.spyOn(ops, 'run');
    const service = await started(ops);
    expect(await exchange('not json\n')).toEqual({ ok: false, error: 'malformed request' });
    expect(await request({ op: 'tenant.delete', name: 'x' })).toEqual({
      ok: false,
      error: 'malformed request',
    });
    expect(await request(null)).toEqual({ ok: false, error: 'malformed request' });
    expect(run).not.toHaveBeenCalled();
    await service.onApplicationShutdown();
  });

  it('reads a request split across chunks, up to its line end', async () => {
    const service = await started(operations([V1]));
    const line = JSON.stringify({ op: 'tenant.create', name: 'Split' });
    const reply = (await exchange(line.slice(0, 10), line.slice(10), '\n{"ignored": true}')) as {
      ok: boolean;
      result: { tenant_id: string };
    };
    expect(reply.ok).toBe(true);
    expect(await db.rows('SELECT name FROM tenants WHERE id = $1', [reply.result.tenant_id])).toEqual([
      { name: 'Split' },
    ]);
    await service.onApplicationShutdown();
  });

  it('closes a connection whose request grows past 64 KiB without a line end, answering nothing', async () => {
    const service = await started(operations([V1]));
    expect(await exchange('x'.repeat(64 * 1024 + 1))).toBeUndefined();
    await service.onApplicationShutdown();
  });

  it('answers a failure with its message, logging it', async () => {
    const ops = operations([V1]);
    jest.spyOn(ops, 'run').mockRejectedValueOnce(new Error('the disk is full'));
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const service = await started(ops);
    expect(await request({ op: 'logs.verify', seal: false })).toEqual({
      ok: false,
      error: 'the disk is full',
    });
    expect(error).toHaveBeenCalledWith(
      'control request logs.verify failed',
      expect.stringContaining('the disk is full'),
    );
    await service.onApplicationShutdown();
  });
});

describe('the operations behind it', () => {
  let created: { tenant_id: string; management_application_id: string; management_key: string };

  it('tenant.create: the tenant, its management application and its key', async () => {
    const service = await started(operations([V1]));
    const reply = (await request({ op: 'tenant.create', name: 'Shop' })) as {
      ok: true;
      result: typeof created;
    };
    expect(reply).toMatchObject({ ok: true });
    created = reply.result;
    expect(created.management_key).toMatch(/^key_/);
    expect(await db.rows('SELECT key_version FROM tenants WHERE id = $1', [created.tenant_id])).toEqual([
      { key_version: 'v1' },
    ]);
    expect(await db.rows('SELECT id FROM applications WHERE tenant_id = $1', [created.tenant_id])).toEqual([
      { id: created.management_application_id },
    ]);
    await service.onApplicationShutdown();
  });

  it('logs.verify: appends what has committed first when asked to, then reports', async () => {
    const service = await started(operations([V1]));
    const reply = (await request({ op: 'logs.verify', tenant: created.tenant_id, seal: true })) as {
      ok: true;
      result: { rows_checked: number; problems: unknown[] };
    };
    expect(reply).toEqual({
      ok: true,
      result: { tenants_checked: 1, rows_checked: 2, checkpoints_checked: 1, problems: [] },
    });
    await service.onApplicationShutdown();
  });

  it("keys.rotate: refused, re-wrapping nothing, when the caller's active key is not the server's", async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const service = await started(operations([V1, V2]));
    const reply = (await request({ op: 'keys.rotate', active: 'v3' })) as { ok: false; error: string };
    expect(reply.ok).toBe(false);
    expect(reply.error).toMatch(/encrypts under master key v2, not v3/);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('control request keys.rotate refused'));
    expect(await db.rows('SELECT key_version FROM tenants')).toEqual([
      { key_version: 'v1' },
      { key_version: 'v1' },
    ]);
    await service.onApplicationShutdown();
  });

  it('keys.rotate-to: refused by a running server (a change of provider is made with every server stopped)', async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const service = await started(operations([V1]));
    const reply = (await request({ op: 'keys.rotate-to', to: 'pkcs11' })) as { ok: false; error: string };
    expect(reply.ok).toBe(false);
    expect(reply.error).toMatch(
      /^keys rotate --to refused: a change of provider is made with every server stopped/,
    );
    expect(await db.rows("SELECT version FROM master_key_checks WHERE provider <> 'env'")).toEqual([]);
    await service.onApplicationShutdown();
  });

  it('keys.rotate: refused while a live server lacks the new key, naming it; done once it has gone', async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const behind = {
      id: '00000000-0000-4000-8000-0000000000be',
      hostname: 'vault-2',
      pid: 77,
      keyVersions: ['v1'],
    };
    await instances.beat(behind);
    await instances.beat({ id: SELF, hostname: 'this', pid: 1, keyVersions: ['v1'] });
    const service = await started(operations([V1, V2]));
    const refused = (await request({ op: 'keys.rotate', active: 'v2' })) as { ok: false; error: string };
    expect(refused.error).toMatch(/the server on vault-2 \(pid 77\) holds master key v1 only, not v2/);
    expect(refused.error).not.toMatch(/on this/);

    await instances.remove(behind.id);
    expect(await request({ op: 'keys.rotate', active: 'v2' })).toEqual({
      ok: true,
      result: { active_version: 'v2', rewrapped_tenants: 2 },
    });
    // (The system tenant, whose log recorded the rotation, has no key.)
    expect(await db.rows('SELECT DISTINCT key_version FROM tenants WHERE wrapped_key IS NOT NULL')).toEqual([
      { key_version: 'v2' },
    ]);
    expect(await db.rows(`SELECT message FROM audit_logs WHERE entity_type = 'key' ORDER BY seq`)).toEqual([
      { message: 'Key rotation to v2 started' },
      { message: 'Key rotation to v2 finished: 2 tenant keys and 1 signing keys re-wrapped' },
    ]);
    // The audit log's signing key is sealed under the new master key too.
    expect(await db.rows('SELECT DISTINCT master_key_version FROM audit_signing_keys')).toEqual([
      { master_key_version: 'v2' },
    ]);
    await service.onApplicationShutdown();
  });
});
