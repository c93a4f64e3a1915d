import { Client } from 'pg';

/**
 * The SQL texts this process's pg clients send while `work` runs: TypeORM's queries and the pool's own
 * (a one-statement write's prepared statement) alike.
 */
export async function statementsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const spy = jest.spyOn(Client.prototype, 'query');
  try {
    await work();
    return spy.mock.calls.map(([query]: unknown[]) =>
      typeof query === 'string' ? query : String((query as { text?: unknown }).text),
    );
  } finally {
    spy.mockRestore();
  }
}
