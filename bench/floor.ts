/**
 * The floor: the least a server must do for the same work, with nothing of the service's framework.
 * A bare node:http server with pg: parse the body, validate each card (Luhn, expiry, CVC), seal it with
 * AES-256-GCM and HMAC its fingerprint, seal its CVC apart (the service keeps a CVC apart from the token,
 * for an hour at most), then one multi-row INSERT of tokens, one of CVCs and one of audit rows in one
 * transaction, and answer with the masked tokens. Also GET /tokens/:id and a keyset page of logs, so
 * that the service's reads have a floor too, and GET /ready.
 *
 *   DATABASE_URL=postgres://... PORT=4100 npx ts-node --transpile-only bench/floor.ts
 */
import { createCipheriv, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'pg';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL ?? 10) });
const encryptionKey = randomBytes(32);
const fingerprintKey = randomBytes(32);
const tenantId = randomUUID();
const actorId = randomUUID();

interface Card {
  number: string;
  expiration_month: number;
  expiration_year: number;
  cvc?: string;
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

function valid(card: Card): boolean {
  return (
    typeof card?.number === 'string' &&
    /^\d{12,19}$/.test(card.number) &&
    luhn(card.number) &&
    Number.isInteger(card.expiration_month) &&
    card.expiration_month >= 1 &&
    card.expiration_month <= 12 &&
    Number.isInteger(card.expiration_year) &&
    (card.cvc === undefined || (typeof card.cvc === 'string' && /^\d{3}$/.test(card.cvc)))
  );
}

function seal(plaintext: Buffer, aad: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
  cipher.setAAD(Buffer.from(aad));
  return Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** The floor's tokenize: the status and body to answer (bench/floor-nest.ts serves the same work). */
export async function tokenizeWork(body: unknown): Promise<[number, unknown]> {
  const elements = (Array.isArray(body) ? body : [body]) as { type: string; data: Card }[];
  if (
    !elements.length ||
    elements.length > 100 ||
    !elements.every((e) => e?.type === 'card' && valid(e.data))
  )
    return [400, { status: 400, detail: 'invalid card' }];
  const now = new Date();
  const tokens = elements.map((e) => {
    const id = randomUUID();
    const { cvc, ...data } = e.data;
    return {
      id,
      sealed: seal(Buffer.from(JSON.stringify(data)), `${tenantId}:${id}:data`),
      cvc: cvc === undefined ? undefined : seal(Buffer.from(cvc), `${tenantId}:${id}:cvc`),
      fingerprint: createHmac('sha256', fingerprintKey).update(e.data.number).digest('base64url'),
      mask: {
        number: `${'X'.repeat(e.data.number.length - 4)}${e.data.number.slice(-4)}`,
        expiration_month: e.data.expiration_month,
        expiration_year: e.data.expiration_year,
      },
    };
  });
  const tokenParams: unknown[] = [];
  const tokenRows = tokens.map((t, i) => {
    tokenParams.push(t.id, tenantId, t.sealed, JSON.stringify(t.mask), t.fingerprint, now);
    const b = i * 6;
    return `($${b + 1}, $${b + 2}, 'card', $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6})`;
  });
  const cvcExpiry = new Date(now.getTime() + 3_600_000);
  const cvcParams: unknown[] = [];
  const cvcRows = tokens.flatMap((t) => {
    if (!t.cvc) return [];
    const b = cvcParams.length;
    cvcParams.push(t.id, tenantId, t.cvc, cvcExpiry);
    return [`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4})`];
  });
  const auditParams: unknown[] = [];
  const auditRows = tokens.map((t, i) => {
    auditParams.push(randomUUID(), tenantId, actorId, t.id, now);
    const b = i * 5;
    return `($${b + 1}, $${b + 2}, $${b + 3}, 'application', 'token', $${b + 4}, 'create', 'Token created (card)', $${b + 5})`;
  });
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO floor_tokens (id, tenant_id, type, data, mask, fingerprint, created_at) VALUES ${tokenRows.join(', ')}`,
      tokenParams,
    );
    if (cvcRows.length)
      await client.query(
        `INSERT INTO floor_cvcs (token_id, tenant_id, cvc, expires_at) VALUES ${cvcRows.join(', ')}`,
        cvcParams,
      );
    await client.query(
      `INSERT INTO floor_audit (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at) VALUES ${auditRows.join(', ')}`,
      auditParams,
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
  const out = tokens.map((t) => ({
    id: t.id,
    tenant_id: tenantId,
    type: 'card',
    mask: t.mask,
    fingerprint: t.fingerprint,
    created_at: now.toISOString(),
  }));
  return [201, Array.isArray(body) ? out : out[0]];
}

async function tokenize(body: unknown, res: ServerResponse): Promise<void> {
  const [status, answer] = await tokenizeWork(body);
  send(res, status, answer);
}

async function getToken(id: string, res: ServerResponse): Promise<void> {
  const { rows } = await pool.query(
    'SELECT id, tenant_id, type, mask, fingerprint, created_at FROM floor_tokens WHERE tenant_id = $1 AND id = $2',
    [tenantId, id],
  );
  if (!rows[0]) return send(res, 404, { status: 404 });
  send(res, 200, rows[0]);
}

async function logs(url: URL, res: ServerResponse): Promise<void> {
  const start = url.searchParams.get('start');
  const params: unknown[] = [url.searchParams.get('tenant') ?? tenantId];
  let where = 'tenant_id = $1';
  if (start) {
    const [at, id] = JSON.parse(Buffer.from(start, 'base64url').toString()) as [string, string];
    params.push(at, id);
    where += ' AND (created_at, id) < ($2::timestamptz, $3::uuid)';
  }
  const { rows } = await pool.query(
    `SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at FROM audit_logs WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT 21`,
    params,
  );
  send(res, 200, { pagination: { page_size: 20 }, data: rows.slice(0, 20) });
}

/** The floor's tables, made when missing. */
export async function createFloorTables(): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS floor_tokens (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, type text NOT NULL,
    data bytea NOT NULL, mask jsonb, fingerprint text NOT NULL, created_at timestamptz NOT NULL)`);
  await pool.query(`CREATE TABLE IF NOT EXISTS floor_audit (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, actor_id uuid,
    actor_type text, entity_type text, entity_id text, operation text, message text, created_at timestamptz NOT NULL)`);
  await pool.query('CREATE INDEX IF NOT EXISTS floor_audit_idx ON floor_audit (tenant_id, created_at, id)');
  // A CVC is deleted within the hour: the index finds the expired ones (the service has the same).
  await pool.query(`CREATE TABLE IF NOT EXISTS floor_cvcs (token_id uuid NOT NULL, tenant_id uuid NOT NULL,
    cvc bytea NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, token_id))`);
  await pool.query('CREATE INDEX IF NOT EXISTS floor_cvcs_expires_idx ON floor_cvcs (expires_at)');
}

async function main(): Promise<void> {
  await createFloorTables();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://floor');
    const work =
      req.method === 'POST' && url.pathname === '/tokenize'
        ? readBody(req).then((body) => tokenize(body, res))
        : req.method === 'GET' && url.pathname.startsWith('/tokens/')
          ? getToken(url.pathname.slice(8), res)
          : req.method === 'GET' && url.pathname === '/logs'
            ? logs(url, res)
            : req.method === 'GET' && url.pathname === '/ready'
              ? Promise.resolve(send(res, 200, { status: 'ready' }))
              : Promise.resolve(send(res, 404, { status: 404 }));
    work.catch(() => send(res, 500, { status: 500 }));
  });
  server.listen(Number(process.env.PORT ?? 4100), '127.0.0.1', () => process.stdout.write('floor ready\n'));
  process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
}

if (require.main === module) void main();
