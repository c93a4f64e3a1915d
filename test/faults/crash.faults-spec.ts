import { createDatabase, dropDatabase } from '../support/test-database';
import { freePort, stop } from '../support/processes';
import { allOrNone, api, privateKey, startServer, tokenizeLoad } from './support';

/** kill -9 during a tokenize load, then a restart: acknowledged tokens are all there, requests all or none. */
describe('server killed with SIGKILL under load', () => {
  it('keeps every acknowledged token and never half a request', async () => {
    const db = await createDatabase('vault_test_crash');
    const port = await freePort();
    try {
      let server = await startServer(port, db.url);
      const key = await privateKey(server);
      const load = tokenizeLoad(() => server.base, key);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      server.spawned.child.kill('SIGKILL');
      await server.spawned.exited;
      await new Promise((resolve) => setTimeout(resolve, 300));
      await load.stop();

      server = await startServer(port, db.url);
      let missing = 0;
      for (const ids of load.acknowledged.values())
        for (const id of ids)
          if ((await api(server.base, key, 'GET', `/tokens/${id}`)).status !== 200) missing++;
      const { complete, partial } = await allOrNone(db.url);
      process.stdout.write(
        `crash: ${load.statuses.length} requests, ${load.acknowledged.size} acknowledged (${load.acknowledged.size * 10} tokens), ` +
          `${load.statuses.filter((s) => s === 0).length} cut off by the kill; after restart: ${missing} missing, ` +
          `${complete} complete requests in the database, ${partial.length} partial\n`,
      );
      expect(load.acknowledged.size).toBeGreaterThan(10);
      expect(missing).toBe(0);
      expect(partial).toEqual([]);
      expect(complete).toBeGreaterThanOrEqual(load.acknowledged.size);
      await stop(server.spawned);
    } finally {
      await dropDatabase(db.name);
    }
  });
});
