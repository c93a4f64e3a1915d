import request from 'supertest';
import { badLuhn, cardNumber, digitsShown, encryptTo } from './support/card-files';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { waitFor } from './support/wait';

/**
 * Card imports through HTTP (docs/migration.md): the import key, CSV and JSONL files encrypted with
 * openpgp to it, every malformed line reported by line and field, duplicates, buyers made or found, a
 * file for another tenant's key refused, another tenant kept out, and not a digit of a card number in
 * any result, answer or log line.
 */
describe('card imports', () => {
  let t: TestApp;
  let a: TestTenant;
  let b: TestTenant;
  let pvt: string;
  const shown: string[] = [];

  beforeAll(async () => {
    t = await startApp();
    a = await newTenant(t, 'imports a');
    b = await newTenant(t, 'imports b');
    pvt = (
      await newApplication(t, a.managementKey, {
        type: 'private',
        permissions: ['orchestration:buyers:read', 'orchestration:buyers:create', 'token:read'],
      })
    ).key;
  });
  afterAll(() => t.close());

  const get = async (path: string, key = a.managementKey) => {
    const res = await request(t.http).get(path).set('BT-API-KEY', key);
    shown.push(res.text);
    return res;
  };
  const post = async (
    bytes: Buffer,
    query = '',
    key = a.managementKey,
    type = 'application/pgp-encrypted',
  ) => {
    const res = await request(t.http)
      .post(`/tokens/imports${query}`)
      .set('BT-API-KEY', key)
      .set('Content-Type', type)
      .send(bytes);
    shown.push(res.text);
    return res;
  };
  const publicKey = async (key = a.managementKey): Promise<string> =>
    (await get('/tokens/imports/key', key).then((r) => r.body as { public_key: string })).public_key;
  const finished = (id: string) =>
    waitFor(
      async () => {
        const res = await get(`/tokens/imports/${id}`);
        return ['completed', 'failed'].includes(res.body.status) && res.body;
      },
      { timeoutMs: 30_000, what: `import ${id} to end` },
    );
  const resultsOf = async (id: string, key = a.managementKey) =>
    (await get(`/tokens/imports/${id}/results?size=100`, key)).body.data as Record<string, unknown>[];

  const numbers = [1, 2, 3, 4, 5, 6].map((i) => cardNumber(900 + i, '52000'));

  it('serves one key per tenant, armored, with its fingerprint', async () => {
    const res = await get('/tokens/imports/key');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      public_key: expect.stringContaining('-----BEGIN PGP PUBLIC KEY BLOCK-----'),
      fingerprint: expect.stringMatching(/^[0-9A-F]{40}$/),
      algorithm: 'ed25519/cv25519',
    });
    expect((await get('/tokens/imports/key')).body).toEqual(res.body);
    expect((await get('/tokens/imports/key', b.managementKey)).body.fingerprint).not.toBe(
      res.body.fingerprint,
    );
    expectProblem(await get('/tokens/imports/key', pvt), 403);
  });

  it('imports a CSV file: tokens, duplicates, buyers made and found, each bad line by line and field', async () => {
    const found = await request(t.http)
      .post('/orchestration/buyers')
      .set('BT-API-KEY', pvt)
      .send({ external_identifier: 'buyer-found' })
      .expect(201);
    const [n1, n2, n3] = numbers;
    const csv = [
      'number,expiration_month,expiration_year,external_id,buyer_external_id,holder_name,metadata.plan',
      `${n1},12,2031,ext-one,buyer-found,Ada Lovelace,gold`,
      `${n2},11,2032,ext-two,buyer-new,,`,
      `${n1},12,2031,ext-again,,,`,
      `${badLuhn(n3)},12,2031,ext-luhn,,,`,
      `${n3},1,2001,ext-expired,,,`,
      `${n3},12,2031,ext-short`,
      `${n3},,2031,ext-missing,,,`,
      `${n3},13,2031,ext-month,,,`,
    ].join('\n');
    const created = await post(await encryptTo(await publicKey(), csv, 'cards.csv'));
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ id: expect.any(String), status: 'pending', format: 'csv' });
    const job = await finished(created.body.id);
    expect(job).toMatchObject({ status: 'completed', total: 8, imported: 2, duplicates: 1, failed: 5 });
    expect(job.started_at).toEqual(expect.any(String));
    expect(job.completed_at).toEqual(expect.any(String));

    const results = await resultsOf(created.body.id);
    expect(results.map((r) => [r.line, r.external_id, r.status, r.error])).toEqual([
      [2, 'ext-one', 'imported', undefined],
      [3, 'ext-two', 'imported', undefined],
      [4, 'ext-again', 'duplicate', undefined],
      [5, 'ext-luhn', 'failed', { field: 'number', code: 'luhn_check_failed' }],
      [6, 'ext-expired', 'failed', { field: 'expiration_year', code: 'expired' }],
      [7, undefined, 'failed', { field: null, code: 'wrong_column_count' }],
      [8, 'ext-missing', 'failed', { field: 'expiration_month', code: 'missing' }],
      [9, 'ext-month', 'failed', { field: 'expiration_month', code: 'invalid' }],
    ]);
    expect(results[2].token_id).toBe(results[0].token_id);
    for (const result of results) expect(digitsShown(result)).toBe('');

    const token = await get(`/tokens/${String(results[0].token_id)}`, pvt);
    expect(token.body).toMatchObject({
      type: 'card',
      metadata: { plan: 'gold' },
      mask: { number: `XXXXXXXXXXXX${n1.slice(-4)}` },
    });
    const methods = await get(`/orchestration/buyers/${found.body.id}/payment-methods`, pvt);
    expect(methods.body.map((m: { id: string }) => m.id)).toEqual([results[0].token_id]);
    const made = await get('/orchestration/buyers?external_identifier=buyer-new', pvt);
    expect(made.body.data).toHaveLength(1);
    const theirs = await get(`/orchestration/buyers/${made.body.data[0].id}/payment-methods`, pvt);
    expect(theirs.body.map((m: { id: string }) => m.id)).toEqual([results[1].token_id]);
  });

  it('imports a JSONL file (armored, format from the query), a number already stored being a duplicate', async () => {
    const [n1, , , n4] = numbers;
    const lines = [
      JSON.stringify({ number: n4, expiration_month: 2, expiration_year: 2033, external_id: 'j-new' }),
      JSON.stringify({ number: n1, expiration_month: 12, expiration_year: 2031, external_id: 'j-old' }),
      '{"number": "',
      JSON.stringify({ number: n4, expiration_month: 2, expiration_year: 2033, cvc: '123' }),
      JSON.stringify([n4]),
    ];
    const bytes = Buffer.concat([Buffer.from(`${lines.join('\n')}\n`), Buffer.from([0xc3, 0x28, 0x0a])]);
    const created = await post(
      await encryptTo(await publicKey(), bytes, 'export.dat', true),
      '?format=jsonl',
    );
    expect(created.status).toBe(202);
    const job = await finished(created.body.id);
    expect(job).toMatchObject({ status: 'completed', total: 6, imported: 1, duplicates: 1, failed: 4 });
    const results = await resultsOf(created.body.id);
    expect(results.map((r) => [r.line, r.status, r.error])).toEqual([
      [1, 'imported', undefined],
      [2, 'duplicate', undefined],
      [3, 'failed', { field: null, code: 'invalid_json' }],
      [4, 'failed', { field: null, code: 'unknown_field' }],
      [5, 'failed', { field: null, code: 'not_an_object' }],
      [6, 'failed', { field: null, code: 'invalid_encoding' }],
    ]);
    for (const result of results) expect(digitsShown(result)).toBe('');
  });

  it("refuses a file encrypted to another tenant's key, a file without a format, and other media types", async () => {
    const csv = `number,expiration_month,expiration_year\n${numbers[5]},12,2031\n`;
    const wrongKey = await post(await encryptTo(await publicKey(b.managementKey), csv, 'cards.csv'));
    expectProblem(wrongKey, 400);
    expect(wrongKey.body).toMatchObject({ code: 'import_key_mismatch' });
    const noFormat = await post(await encryptTo(await publicKey(), csv, 'cards'));
    expectProblem(noFormat, 400);
    expect(Object.keys(noFormat.body.errors)).toEqual(['format']);
    const plain = await post(Buffer.from(csv), '?format=csv', a.managementKey, 'text/csv');
    expect(plain.status).toBe(415);
    expect(plain.body.code).toBe('unsupported_media_type');
    // Nothing was made of any of them: the number is nowhere.
    const search = await request(t.http).get(`/tokens?type=card&size=100`).set('BT-API-KEY', pvt).expect(200);
    expect(search.body.data.map((tk: { mask: { number: string } }) => tk.mask.number)).not.toContain(
      `XXXXXXXXXXXX${numbers[5].slice(-4)}`,
    );
  });

  it('answers a retry with the same key and file its job; the key with another file is refused', async () => {
    const first = await encryptTo(await publicKey(), `number,expiration_month,expiration_year\n`, 'a.csv');
    const other = await encryptTo(await publicKey(), `number,expiration_month,expiration_year\n`, 'b.csv');
    const send = (bytes: Buffer, key: string) =>
      request(t.http)
        .post('/tokens/imports')
        .set('BT-API-KEY', a.managementKey)
        .set('BT-IDEMPOTENCY-KEY', key)
        .set('Content-Type', 'application/pgp-encrypted')
        .send(bytes);
    const created = await send(first, 'import-once');
    expect(created.status).toBe(202);
    const retried = await send(first, 'import-once');
    expect(retried.status).toBe(202);
    expect(retried.headers['bt-idempotency-replayed']).toBe('true');
    expect(retried.text).toBe(created.text);
    const reused = await send(other, 'import-once');
    expectProblem(reused, 422);
    expect(reused.body.code).toBe('idempotency_key_reused');
    // A file that is refused gives its key back: the key then makes a job of a good file.
    const refused = await send(Buffer.from('not a message'), 'import-refused');
    expectProblem(refused, 400);
    const second = await send(other, 'import-refused');
    expect(second.status).toBe(202);
    await finished(created.body.id);
    await finished(second.body.id);
  });

  it('never shows a job or its results to another tenant', async () => {
    const csv = `number,expiration_month,expiration_year\n${numbers[4]},12,2031\n`;
    const created = await post(await encryptTo(await publicKey(), csv, 'cards.csv'));
    await finished(created.body.id);
    expectProblem(await get(`/tokens/imports/${created.body.id}`, b.managementKey), 404);
    expectProblem(await get(`/tokens/imports/${created.body.id}/results`, b.managementKey), 404);
  });

  it('audits each job event once, and shows no card number in any answer or log line', async () => {
    const logs = await get('/logs?entity_type=token_import&size=100');
    expect(logs.status).toBe(200);
    const messages = logs.body.data.map((row: { message: string }) => row.message);
    expect(messages.filter((m: string) => m === 'Import created')).toHaveLength(5);
    expect(messages.filter((m: string) => m === 'Import completed')).toHaveLength(5);
    for (const text of [...shown, ...t.logs])
      for (const number of numbers) {
        expect(text).not.toContain(number);
        expect(text).not.toContain(number.slice(0, 12));
      }
  });
  it("records processors' tokens on the stored cards; one a card cannot take is named on its line", async () => {
    const orchestration = (
      await newApplication(t, a.managementKey, {
        type: 'private',
        permissions: [...ORCHESTRATION_PERMISSIONS, 'orchestration:buyers:read'],
      })
    ).key;
    const stripe = (await newConnection(t, orchestration, { currencies: ['USD'], countries: ['US'] })).id;
    const [n5, n6, n7] = [911, 912, 913].map((i) => cardNumber(i, '52000'));
    const token = 'pm_1ImportedMandate00Xk2c';
    const line = (number: string, extra: Record<string, string>) =>
      JSON.stringify({ number, expiration_month: 4, expiration_year: 2034, ...extra });
    const lines = [
      line(n5, {
        buyer_external_id: 'sub-1',
        connection_id: stripe,
        connection_token: token,
        connection_customer: 'cus_Imported1',
        network_transaction_id: '483299310332879',
      }),
      line(n6, {
        buyer_external_id: 'sub-2',
        connection_id: '6f1d7c2e-54a1-4c1e-9d1f-0a2b3c4d5e6f',
        connection_token: token,
        connection_customer: 'cus_Imported2',
      }),
      line(n7, { connection_id: stripe, connection_token: token, connection_customer: 'cus_Imported3' }),
    ];
    const created = await post(
      await encryptTo(await publicKey(), Buffer.from(`${lines.join('\n')}\n`), 'subs.jsonl'),
    );
    expect(created.status).toBe(202);
    expect(await finished(created.body.id)).toMatchObject({ status: 'completed', imported: 3, failed: 0 });
    const results = await resultsOf(created.body.id);
    expect(results.map((r) => [r.line, r.status, r.error])).toEqual([
      [1, 'imported', undefined],
      [2, 'imported', { field: 'connection_id', code: 'refused' }],
      [3, 'imported', { field: 'buyer_external_id', code: 'not_stored' }],
    ]);
    const buyer = (await get('/orchestration/buyers?external_identifier=sub-1', orchestration)).body.data[0];
    const methods = await get(`/orchestration/buyers/${buyer.id}/payment-methods`, orchestration);
    expect(methods.body[0].connection_tokens).toEqual([
      {
        connection_id: stripe,
        token: '****Xk2c',
        connection_customer: 'cus_Imported1',
        network_transaction_id: '483299310332879',
      },
    ]);
    expect(shown.join('\n')).not.toContain(token);
  });
});
