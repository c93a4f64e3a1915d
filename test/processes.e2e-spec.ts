import { Client } from 'pg';
import { freePort, spawnJs, Spawned, stop, waitForReady } from './support/processes';
import { createDatabase, dropDatabase } from './support/test-database';

const KEY_LINE = /^\s+(key_mgt_[0-9A-Za-z]+)$/m;

describe('running the service as processes', () => {
  it('two instances started together on one empty database both come up; migrations and bootstrap run once', async () => {
    const db = await createDatabase('vault_test_twins');
    const ports = [await freePort(), await freePort()];
    const servers: Spawned[] = ports.map((port) =>
      spawnJs('dist/main.js', [], {
        DATABASE_URL: db.url,
        PORT: String(port),
        BOOTSTRAP: 'true',
        LOG_LEVEL: 'warn',
      }),
    );
    try {
      await Promise.all(ports.map((port) => waitForReady(port)));
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const migrations = await client.query('SELECT name FROM migrations');
        const names = migrations.rows.map((r: { name: string }) => r.name);
        expect(new Set(names).size).toBe(names.length);
        expect(names.length).toBeGreaterThan(0);
        const tenants = await client.query('SELECT name FROM tenants');
        expect(tenants.rows).toEqual([{ name: 'default' }]);
      } finally {
        await client.end();
      }
      const printed = servers.map((s) => KEY_LINE.exec(s.stdout())?.[1]).filter(Boolean);
      expect(printed).toHaveLength(1);
      // The printed key works on both instances.
      for (const port of ports) {
        const res = await fetch(`http://127.0.0.1:${port}/tenants/self`, {
          headers: { 'BT-API-KEY': printed[0]! },
        });
        expect(res.status).toBe(200);
      }
    } finally {
      await Promise.all(servers.map(stop));
      await dropDatabase(db.name);
    }
  });

  it.each([
    ['PORT', 'abc'],
    ['DATABASE_URL', 'mysql://localhost/x'],
  ])('refuses to start when %s=%s, naming the variable', async (name, value) => {
    const server = spawnJs('dist/main.js', [], {
      [name]: value,
      DATABASE_URL: name === 'DATABASE_URL' ? value : 'postgres://127.0.0.1:1/none',
    });
    const code = await server.exited;
    expect(code).not.toBe(0);
    expect(server.stderr()).toContain(name);
  });

  it('npm run cli -- tenant create prints exactly one JSON object whose key works', async () => {
    const db = await createDatabase('vault_test_cli');
    try {
      const cli = spawnJs('dist/cli.js', ['tenant', 'create', '--name', 'acme'], { DATABASE_URL: db.url });
      expect(await cli.exited).toBe(0);
      const out = cli.stdout().trim();
      expect(out.split('\n')).toHaveLength(1);
      const created = JSON.parse(out);
      expect(created).toEqual({
        tenant_id: expect.any(String),
        management_application_id: expect.any(String),
        management_key: expect.stringMatching(/^key_mgt_[0-9A-Za-z]{40,50}$/),
      });
      const port = await freePort();
      const server = spawnJs('dist/main.js', [], {
        DATABASE_URL: db.url,
        PORT: String(port),
        BOOTSTRAP: 'true',
        LOG_LEVEL: 'warn',
      });
      try {
        await waitForReady(port);
        const res = await fetch(`http://127.0.0.1:${port}/tenants/self`, {
          headers: { 'BT-API-KEY': created.management_key },
        });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ id: created.tenant_id, name: 'acme' });
        // The database was not empty, so no bootstrap key was printed.
        expect(server.stdout()).not.toMatch(KEY_LINE);
      } finally {
        await stop(server);
      }
      const rotate = spawnJs('dist/cli.js', ['keys', 'rotate'], { DATABASE_URL: db.url });
      expect(await rotate.exited).toBe(0);
      expect(JSON.parse(rotate.stdout())).toEqual({ active_version: 'v1', rewrapped_tenants: 0 });
      const bad = spawnJs('dist/cli.js', ['tenant', 'create'], { DATABASE_URL: db.url });
      expect(await bad.exited).not.toBe(0);
      expect(bad.stdout()).toBe('');
    } finally {
      await dropDatabase(db.name);
    }
  });
});
