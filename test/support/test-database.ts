import { Client } from 'pg';

/** The server tests run against; each run gets a database of its own there. */
export const ADMIN_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function createDatabase(prefix = 'vault_test'): Promise<{ name: string; url: string }> {
  const name = `${prefix}_${Date.now()}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
  if (!name.includes('test')) throw new Error(`refusing to use a database whose name lacks "test": ${name}`);
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return { name, url: databaseUrl(name) };
}

export async function dropDatabase(name: string): Promise<void> {
  if (!name.includes('test')) throw new Error(`refusing to drop a database whose name lacks "test": ${name}`);
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
