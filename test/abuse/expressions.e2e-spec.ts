import request from 'supertest';
import { expectProblem, TestApp } from '../support/app';
import { cardData, luhnCard, patchToken, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: expressions (docs/reliability.md). An attacker holding only a public key with
 * `token:create` and `token:update` sends Liquid: tags, amplification, oversized filter results, errors
 * that would echo data. Expressions are output-only, bounded in size, time and memory, and their errors
 * carry a fixed reason. How long an expression may hold the event loop is measured in
 * test/timing/expressions.timing-spec.ts.
 */
describe('abuse: expressions', () => {
  let t: TestApp;
  let pub: string;
  let pvt: string;

  beforeAll(async () => {
    const s = await scene('expressions', {
      pub: { type: 'public', permissions: ['token:create', 'token:update'] },
      pvt: { type: 'private', permissions: ['token:create', 'token:read', 'token:update'] },
    });
    t = s.t;
    ({ pub, pvt } = s.keys);
  });
  afterAll(() => t.close());

  it('an expression error never carries token data, in the response or the log', async () => {
    const number = luhnCard();
    const secretName = 'zq-secret-field-name-81';
    const attempts: Record<string, unknown>[] = [
      { type: 'card', data: cardData(number), fingerprint_expression: '{{ data[data.number] }}' },
      { type: 'card', data: cardData(number), search_indexes: ['{{ data[data.number] }}'] },
      { type: 'card', data: cardData(number), search_indexes: ['{{ data[data.expiration_month] }}'] },
      {
        type: 'token',
        data: { [secretName]: number },
        search_indexes: [`{{ data[data["${secretName}"]] }}`],
      },
      { type: 'token', data: { a: number }, fingerprint_expression: '{{ data.a | split: "" | nope }}' },
    ];
    for (const element of attempts) {
      for (const key of [pub, pvt]) {
        const res = await tokenize(t, key, element);
        expectProblem(res, 400);
        expect(res.text).not.toContain(number);
        expect(res.text).not.toContain(number.slice(-8));
        const paths = Object.keys(res.body.errors ?? {});
        expect(paths.length).toBeGreaterThan(0);
        expect(paths.every((p) => /^(fingerprint_expression|search_indexes\[\d+\])$/.test(p))).toBe(true);
      }
    }
    // The same over stored data (a PATCH): no echo either, whatever the status.
    const stored = await tokenize(t, pvt, { type: 'card', data: cardData(number) }).expect(201);
    for (const key of [pub, pvt]) {
      const res = await patchToken(t, key, stored.body.id, {
        fingerprint_expression: '{{ data[data.number] }}',
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.text).not.toContain(number);
    }
    expect(t.logs.join('\n')).not.toContain(number);
    expect(t.logs.join('\n')).not.toContain(secretName);
  });

  it('refuses every {% %} tag with a 400 naming the field', async () => {
    const tags = [
      '{% assign x = data.number %}{{ x }}',
      '{% for i in (1..3) %}{{ i }}{% endfor %}',
      '{% capture s %}{{ data.number }}{% endcapture %}{{ s }}',
      '{% if data.number %}1{% endif %}',
      '{% raw %}{{ data }}{% endraw %}',
      '{% liquid echo data.number %}',
      '{% comment %}x{% endcomment %}{{ data.number }}',
      '{%- echo data.number -%}',
      '{% increment n %}',
    ];
    for (const expression of tags) {
      const res = await tokenize(t, pub, {
        type: 'card',
        data: cardData(luhnCard()),
        search_indexes: [expression],
      });
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['search_indexes[0]']);
      expect(res.body.errors['search_indexes[0]'][0]).toMatch(/tag/);
    }
  });

  it('refuses (never truncates) a filter result or an output over 4 KiB, even when later filters shrink it', async () => {
    const cases = [
      '{{ data | pad_left: 5000, "x" | slice: 0, 4 }}',
      '{{ data | append: data | append: data | append: data | size }}',
      '{{ data | pad_right: 4097, "*" }}',
      '{{ data | split: "" | concat: (1..5000) | size }}',
    ];
    for (const expression of cases) {
      const res = await tokenize(t, pub, {
        type: 'token',
        data: 'x'.repeat(1500),
        search_indexes: [expression],
      });
      expectProblem(res, 400);
      expect(res.body.errors['search_indexes[0]'][0]).toMatch(/4 KiB|memory/);
    }
    const fine = await tokenize(t, pub, {
      type: 'token',
      data: 'x'.repeat(1500),
      search_indexes: ['{{ data | pad_left: 4000, "x" | slice: 0, 4 }}'],
    });
    expect(fine.status).toBe(201);
  });

  it('expressions still do what users need (Basis Theory filters)', async () => {
    const number = luhnCard('42424242');
    const res = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', pvt)
      .send({
        type: 'card',
        data: cardData(number),
        search_indexes: [
          '{{ data.number | last4 }}',
          '{{ data.number | card_bin }}',
          '{{ data.number | slice: -4, 4 }}',
          '{{ data.expiration_month | pad_left: 2, "0" }}/{{ data.expiration_year }}',
        ],
        fingerprint_expression: '{{ data.number | reveal_last: 6 }}',
      })
      .expect(201);
    expect(res.body.search_indexes).toHaveLength(4);
  });
});
