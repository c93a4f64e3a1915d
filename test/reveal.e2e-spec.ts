import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, TestApp, TestTenant } from './support/app';
import { authorizedSession, cardData, luhnCard, patchToken, scene, tokenize } from './support/attacker';

/**
 * Reveal (docs/access-rules.md): a rule with `transform: "reveal"` shows token data in clear on reads
 * through it, never the CVC; private applications and sessions only, no escalation; every revealed
 * token is audited.
 */

interface Log {
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
}

const READ = ['token:read', 'token:search'];
const reveal = (priority: number, container: string, permissions = READ) => ({
  priority,
  container,
  permissions,
  transform: 'reveal',
});

describe('reveal', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let keys: Record<
    'owner' | 'revealer' | 'flat' | 'masker' | 'redactor' | 'pciOnly' | 'narrow' | 'pub',
    string
  >;
  const tag = randomBytes(6).toString('hex');
  const number = luhnCard();
  const cvc = '739';
  const bank = { routing_number: '021000021', account_number: `5${String(Date.now()).slice(-9)}` };
  const tokenData = { name: `Ada-${tag}`, list: [1, `x-${tag}`], nested: { ok: true } };
  let card: string;
  let bankId: string;
  let general: string;
  let plain: string;

  beforeAll(async () => {
    const s = await scene(`reveal ${tag}`, {
      owner: { type: 'private', permissions: ['token:create'] },
      revealer: {
        type: 'private',
        rules: [reveal(1, '/pci/', [...READ, 'token:update']), reveal(2, '/bank/'), reveal(3, '/general/')],
      },
      flat: { type: 'private', permissions: READ, rules: [reveal(1, '/pci/')] },
      masker: {
        type: 'private',
        rules: [
          { priority: 1, container: '/pci/', permissions: READ, transform: 'mask' },
          { priority: 2, container: '/bank/', permissions: READ },
        ],
      },
      redactor: {
        type: 'private',
        rules: [{ priority: 1, container: '/pci/', permissions: READ, transform: 'redact' }],
      },
      pciOnly: {
        type: 'private',
        rules: [reveal(1, '/pci/'), { priority: 2, container: '/bank/', permissions: READ }],
      },
      narrow: { type: 'private', rules: [reveal(1, '/pci/high/')] },
      pub: { type: 'public', permissions: ['token:create'] },
    });
    ({ t, db, tenant, keys } = s);
    card = (await tokenize(t, keys.owner, { type: 'card', data: cardData(number, { cvc }) }).expect(201)).body
      .id;
    bankId = (await tokenize(t, keys.owner, { type: 'bank', data: bank }).expect(201)).body.id;
    general = (await tokenize(t, keys.owner, { type: 'token', data: tokenData }).expect(201)).body.id;
    plain = (await tokenize(t, keys.owner, { type: 'token', data: `plain-${tag}` }).expect(201)).body.id;
  });
  afterAll(() => t.close());

  const get = (key: string, id: string) => request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', key);
  const list = (key: string, query: Record<string, string> = {}) =>
    request(t.http).get('/tokens').set('BT-API-KEY', key).query(query);
  const search = (key: string, query: string, path = '/tokens/search') =>
    request(t.http).post(path).set('BT-API-KEY', key).send({ query });
  const logsOf = async (id: string): Promise<Log[]> =>
    (
      await request(t.http)
        .get('/logs')
        .set('BT-API-KEY', tenant.managementKey)
        .query({ entity_id: id })
        .expect(200)
    ).body.data;
  const revealRows = async (id: string) => (await logsOf(id)).filter((l) => l.operation === 'reveal');
  const byId = (body: { data: { id: string }[] }) =>
    new Map(body.data.map((token) => [token.id, token as Record<string, unknown>]));
  const clearCard = { number, expiration_month: 12, expiration_year: 2031 };

  /** The CVC is in no response: no `cvc` field, and not as a JSON string anywhere. */
  const expectNoCvc = (text: string) => {
    expect(text).not.toContain('"cvc"');
    expect(text).not.toContain(`"${cvc}"`);
  };

  it('GET /tokens/{id} through reveal returns data in clear instead of mask: card (never the CVC), bank, token', async () => {
    const c = await get(keys.revealer, card).expect(200);
    expect(c.body.data).toEqual(clearCard);
    expect(c.body).not.toHaveProperty('mask');
    expect(c.body).toMatchObject({ id: card, type: 'card', containers: ['/pci/high/'] });
    expect(typeof c.body.fingerprint).toBe('string');
    expectNoCvc(c.text);
    const b = await get(keys.revealer, bankId).expect(200);
    expect(b.body.data).toEqual(bank);
    expect(b.body).not.toHaveProperty('mask');
    expect((await get(keys.revealer, general).expect(200)).body.data).toEqual(tokenData);
    expect((await get(keys.revealer, plain).expect(200)).body.data).toBe(`plain-${tag}`);
  });

  it('lists and searches (v1 and v2) reveal each token through its own deciding rule', async () => {
    const ids = [card, bankId, general, plain];
    const searchAll = async (path: string) => ({
      data: (
        await Promise.all(
          ids.map(async (id) => (await search(keys.revealer, `id:${id}`, path).expect(200)).body.data),
        )
      ).flat(),
    });
    const pages = [
      (await list(keys.revealer).expect(200)).body,
      await searchAll('/tokens/search'),
      (await request(t.http).get('/v2/tokens').set('BT-API-KEY', keys.revealer).expect(200)).body,
      await searchAll('/v2/tokens/search'),
    ];
    for (const page of pages) {
      const found = byId(page);
      expect(found.get(card)?.data).toEqual(clearCard);
      expect(found.get(bankId)?.data).toEqual(bank);
      expect(found.get(general)?.data).toEqual(tokenData);
      expect(found.get(plain)?.data).toBe(`plain-${tag}`);
      for (const id of ids) expect(found.get(id)).not.toHaveProperty('mask');
      expectNoCvc(JSON.stringify(page));
    }
    // Mixed rules: the card through reveal, the bank through a mask rule.
    const mixed = byId((await list(keys.pciOnly).expect(200)).body);
    expect(mixed.get(card)?.data).toEqual(clearCard);
    expect(mixed.get(bankId)).toMatchObject({ mask: { account_number: expect.stringMatching(/^X+\d{4}$/) } });
    expect(mixed.get(bankId)).not.toHaveProperty('data');
    expect(mixed.has(general)).toBe(false);
  });

  it('a reveal rule on /pci/ does not reveal a /bank/high/ token', async () => {
    const b = await get(keys.pciOnly, bankId).expect(200);
    expect(b.body.mask.account_number).toBe(`XXXXXX${bank.account_number.slice(-4)}`);
    expect(b.body).not.toHaveProperty('data');
    expect(b.text).not.toContain(bank.account_number);
    // Without any rule on /bank/, the token stays unknown.
    expectProblem(await get(keys.narrow, bankId), 404);
  });

  it('flat permissions read masked (a reveal rule behind them changes nothing); mask and redact as before', async () => {
    const revealedBefore = (await revealRows(card)).length;
    for (const key of [keys.flat, keys.masker]) {
      const c = await get(key, card).expect(200);
      expect(c.body.mask).toEqual({ ...clearCard, number: `XXXXXXXXXXXX${number.slice(-4)}` });
      expect(c.body).not.toHaveProperty('data');
      expect(c.text).not.toContain(number);
      const page = (await list(key, { type: 'card' }).expect(200)).body;
      expect(JSON.stringify(page)).not.toContain(number);
    }
    const flatGeneral = await get(keys.flat, general).expect(200);
    expect(flatGeneral.body).not.toHaveProperty('data');
    expect(flatGeneral.text).not.toContain(tag);
    const redacted = await get(keys.redactor, card).expect(200);
    expect(redacted.body).not.toHaveProperty('mask');
    expect(redacted.body).not.toHaveProperty('data');
    // Masked and redacted reads reveal nothing, so they write no reveal row.
    expect(await revealRows(card)).toHaveLength(revealedBefore);
  });

  it('writes one reveal audit row per revealed token, besides the read row, with no data in it', async () => {
    const fresh = (await tokenize(t, keys.owner, { type: 'card', data: cardData(luhnCard()) }).expect(201))
      .body.id as string;
    expect(await revealRows(fresh)).toEqual([]);
    await get(keys.flat, fresh).expect(200);
    expect(await revealRows(fresh)).toEqual([]);
    await get(keys.revealer, fresh).expect(200);
    await search(keys.revealer, `id:${fresh}`).expect(200);
    const rows = await logsOf(fresh);
    expect(rows.filter((l) => l.operation === 'reveal')).toEqual([
      expect.objectContaining({ entity_type: 'token', entity_id: fresh, message: 'Token revealed (card)' }),
      expect.objectContaining({ entity_type: 'token', entity_id: fresh, message: 'Token revealed (card)' }),
    ]);
    expect(rows.filter((l) => l.operation === 'read' && l.entity_id === fresh)).toHaveLength(2);
    // A list revealing several tokens writes one row for each of them.
    const before = await Promise.all([card, bankId].map(async (id) => (await revealRows(id)).length));
    await list(keys.pciOnly).expect(200);
    expect((await revealRows(card)).length).toBe(before[0] + 1);
    expect((await revealRows(bankId)).length).toBe(before[1]);
    const messages: { message: string }[] = await db.query(
      `SELECT message FROM audit_logs WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    const all = messages.map((m) => m.message).join('\n');
    for (const secret of [number, bank.account_number, tag, cvc]) expect(all).not.toContain(secret);
  });

  it('a reveal read is never stored as an idempotency record: the key is given back, nothing replays', async () => {
    const key = `reveal-${tag}`;
    const send = () =>
      request(t.http)
        .post('/tokens/search')
        .set('BT-API-KEY', keys.revealer)
        .set('BT-IDEMPOTENCY-KEY', key)
        .send({ query: `id:${card}` })
        .expect(200);
    const first = await send();
    const second = await send();
    expect(first.body.data[0].data).toEqual(clearCard);
    expect(second.headers['bt-idempotency-replayed']).toBeUndefined();
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM idempotency_records WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    expect(n).toBe(0);
  });

  it('the answer to a PATCH through a reveal rule is masked; re-keying over stored data is allowed', async () => {
    const res = await patchToken(t, keys.revealer, card, {
      metadata: { k: 'v' },
      search_indexes: ['{{ data.number | last4 }}'],
    }).expect(200);
    expect(res.body.mask.number).toBe(`XXXXXXXXXXXX${number.slice(-4)}`);
    expect(res.body).not.toHaveProperty('data');
    expect(res.text).not.toContain(number);
    const found = (await search(keys.revealer, `data:${number.slice(-4)} id:${card}`).expect(200)).body;
    expect(found.data.map((x: { id: string }) => x.id)).toEqual([card]);
  });

  it('reveal is refused on public and management applications (400 naming rules[i].transform), accepted on private ones', async () => {
    const post = (body: Record<string, unknown>) =>
      request(t.http).post('/applications').set('BT-API-KEY', tenant.managementKey).send(body);
    const pub = await post({
      name: 'p',
      type: 'public',
      rules: [
        { priority: 1, container: '/general/', permissions: ['token:create'] },
        reveal(2, '/pci/', ['token:create']),
      ],
    });
    expectProblem(pub, 400);
    expect(pub.body.errors).toEqual({
      'rules[1].transform': ['reveal is not allowed for public applications'],
    });
    const mgt = await post({ name: 'm', type: 'management', rules: [reveal(1, '/pci/', ['log:read'])] });
    expectProblem(mgt, 400);
    expect(mgt.body.errors).toHaveProperty(['rules[0].transform']);
    const pvt = await post({ name: 'v', type: 'private', rules: [reveal(1, '/pci/')] }).expect(201);
    expect(pvt.body.rules).toEqual([reveal(1, '/pci/')]);
    // Updating a public application to hold a reveal rule is refused the same way.
    const pubApp = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const put = await request(t.http)
      .put(`/applications/${pubApp.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'p', rules: [reveal(1, '/pci/', ['token:create'])] });
    expectProblem(put, 400);
    expect(Object.keys(put.body.errors)).toEqual(['rules[0].transform']);
  });

  it('a session authorized with reveal by an application revealing the whole container reads in clear', async () => {
    const session = await authorizedSession(t, keys.pub, keys.revealer, {
      rules: [reveal(1, '/pci/', ['token:read'])],
    });
    const c = await get(session, card).expect(200);
    expect(c.body.data).toEqual(clearCard);
    expectNoCvc(c.text);
    const rows = await revealRows(card);
    expect(rows[0].message).toMatch(/^Token revealed \(card\) \(session [0-9a-f-]+\)$/);
    // The same session with a mask rule beside it: its own rule decides.
    const masked = await authorizedSession(t, keys.pub, keys.revealer, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }],
    });
    expect((await get(masked, card).expect(200)).body).not.toHaveProperty('data');
  });

  it('refuses a session reveal the authorizer does not hold: no reveal, only mask, flat, or a narrower container (400)', async () => {
    const attempt = async (authorizer: string, rule: Record<string, unknown>) => {
      const created = await request(t.http).post('/sessions').set('BT-API-KEY', keys.pub).expect(201);
      return request(t.http)
        .post('/sessions/authorize')
        .set('BT-API-KEY', authorizer)
        .send({ nonce: created.body.nonce, rules: [rule] });
    };
    for (const [authorizer, rule] of [
      [keys.masker, reveal(1, '/pci/', ['token:read'])],
      [keys.flat, reveal(1, '/pci/', ['token:read'])],
      [keys.narrow, reveal(1, '/pci/', ['token:read'])],
      [keys.revealer, reveal(1, '/pci/', ['token:read', 'token:use'])],
      [
        keys.revealer,
        {
          priority: 1,
          conditions: [{ attribute: 'type', operator: 'equals', value: 'card' }],
          permissions: ['token:read'],
          transform: 'reveal',
        },
      ],
    ] as const) {
      const res = await attempt(authorizer, rule);
      expectProblem(res, 400);
      expect(res.body.errors).toHaveProperty(['rules[0].transform']);
    }
    // The narrower container itself is fine for the narrow application.
    const ok = await attempt(keys.narrow, reveal(1, '/pci/high/', ['token:read']));
    expect(ok.status).toBe(204);
  });

  it('a session stops revealing once its authorizer no longer reveals (checked at every use)', async () => {
    const authorizer = await newApplication(t, tenant.managementKey, {
      type: 'private',
      rules: [reveal(1, '/pci/', ['token:read'])],
    });
    const session = await authorizedSession(t, keys.pub, authorizer.key, {
      rules: [reveal(1, '/pci/', ['token:read'])],
    });
    expect((await get(session, card).expect(200)).body.data).toEqual(clearCard);
    await request(t.http)
      .put(`/applications/${authorizer.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'now masked', rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }] })
      .expect(200);
    const after = await get(session, card).expect(200);
    expect(after.body).not.toHaveProperty('data');
    expect(after.text).not.toContain(number);
  });

  it("another tenant's key, even with reveal, cannot read the token (404) nor list it", async () => {
    const other = await newTenant(t, `reveal other ${tag}`);
    const outsider = await newApplication(t, other.managementKey, {
      type: 'private',
      rules: [reveal(1, '/pci/'), reveal(2, '/bank/'), reveal(3, '/general/')],
    });
    for (const id of [card, bankId, general]) expectProblem(await get(outsider.key, id), 404);
    const page = (await list(outsider.key).expect(200)).body;
    expect(page.data).toEqual([]);
    expect((await search(outsider.key, `id:${card}`).expect(200)).body.data).toEqual([]);
  });
});
