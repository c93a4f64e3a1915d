import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Script } from 'node:vm';
import request from 'supertest';
import { startApp, TestApp } from '../support/app';

const COMMITTED = join(__dirname, '..', '..', 'openapi.json');

interface Schema {
  properties?: Record<string, Schema>;
  required?: string[];
  default?: unknown;
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
}
interface Operation {
  parameters?: { name: string; required?: boolean; schema?: Schema }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

/** The committed openapi.json must be exactly what the running service serves. */
describe('OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('serves the document at /openapi.json, equal to the committed openapi.json', async () => {
    const res = await request(t.http).get('/openapi.json').expect(200);
    const served = `${JSON.stringify(res.body, null, 2)}\n`;
    if (process.env.UPDATE_OPENAPI === 'true') writeFileSync(COMMITTED, served);
    const committed = readFileSync(COMMITTED, 'utf8');
    // On a difference, run `npm run openapi` and commit the result.
    expect(JSON.parse(served)).toEqual(JSON.parse(committed));
    expect(served).toBe(committed);
  });

  it('declares BT-API-KEY as an apiKey security scheme and uses it', async () => {
    const { body } = await request(t.http).get('/openapi.json').expect(200);
    expect(body.components.securitySchemes['BT-API-KEY']).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'BT-API-KEY',
      description: expect.any(String),
    });
    expect(body.paths['/applications'].post.security).toEqual([{ 'BT-API-KEY': [] }]);
    expect(body.paths['/applications'].post.responses).toHaveProperty('401');
    expect(body.paths['/applications'].post.responses).toHaveProperty('403');
    expect(body.paths['/health/ready'].get.security).toEqual([]);
  });

  it('describes request bodies from the DTOs (swagger plugin applied)', async () => {
    const { body } = await request(t.http).get('/openapi.json').expect(200);
    const schema = body.components.schemas.CreateApplicationDto;
    expect(schema.required).toEqual(expect.arrayContaining(['name', 'type']));
    expect(schema.properties.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
    expect(schema.properties.type.enum).toEqual(['public', 'private', 'management']);
    const list = body.paths['/applications'].get.parameters.map((p: { name: string }) => p.name);
    expect(list).toEqual(expect.arrayContaining(['page', 'size', 'type']));
  });

  it('gives every operation an operationId, a tag, a summary and a documented error response', async () => {
    const { body } = await request(t.http).get('/openapi.json').expect(200);
    const ids = new Set<string>();
    let operations = 0;
    interface Operation {
      operationId?: string;
      tags?: string[];
      summary?: string;
      responses: Record<string, { content?: Record<string, unknown> }>;
    }
    for (const [path, item] of Object.entries(body.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, op] of Object.entries(item)) {
        operations++;
        const where = `${method.toUpperCase()} ${path}`;
        expect({ where, operationId: typeof op.operationId }).toEqual({ where, operationId: 'string' });
        const id = op.operationId ?? '';
        expect({ where, unique: ids.has(id) }).toEqual({ where, unique: false });
        ids.add(id);
        expect({ where, tags: (op.tags ?? []).length > 0 }).toEqual({ where, tags: true });
        expect({ where, summary: typeof op.summary }).toEqual({ where, summary: 'string' });
        const errors = Object.keys(op.responses).filter((status) => /^[45]/.test(status));
        expect({ where, errors: errors.length > 0 }).toEqual({ where, errors: true });
        for (const status of errors.filter((s) => s !== '503'))
          expect({ where, status, content: Object.keys(op.responses[status].content ?? {}) }).toEqual({
            where,
            status,
            content: ['application/problem+json'],
          });
      }
    }
    expect(operations).toBeGreaterThan(35);
  });

  it('serves the Swagger UI at /docs, its init script parses and loads the document from /openapi.json', async () => {
    const res = await request(t.http).get('/docs').redirects(1).expect(200);
    expect(res.text).toContain('swagger-ui');
    const init = await request(t.http).get('/docs/swagger-ui-init.js').expect(200);
    expect(() => new Script(init.text, { filename: 'swagger-ui-init.js' })).not.toThrow();
    expect(init.text).toContain('"swaggerUrl": "/openapi.json"');
  });

  it('requires no value that has a default, and keeps `default` out of component schemas', async () => {
    const { body } = await request(t.http).get('/openapi.json').expect(200);
    const wrong: string[] = [];
    const visit = (schema: Schema | undefined, where: string, component: boolean): void => {
      if (!schema || typeof schema !== 'object') return;
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        if (property.default !== undefined && schema.required?.includes(name))
          wrong.push(`${where}.${name} required`);
        if (property.default !== undefined && component) wrong.push(`${where}.${name} default`);
        visit(property, `${where}.${name}`, component);
      }
      visit(schema.items, `${where}[]`, component);
      for (const member of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])])
        visit(member, where, component);
    };
    for (const [name, schema] of Object.entries(body.components.schemas as Record<string, Schema>))
      visit(schema, name, true);
    for (const [path, item] of Object.entries(body.paths as Record<string, Record<string, Operation>>))
      for (const [method, operation] of Object.entries(item)) {
        for (const parameter of operation.parameters ?? [])
          if (parameter.schema?.default !== undefined && parameter.required)
            wrong.push(`${method} ${path} ${parameter.name} required`);
        for (const content of Object.values(operation.requestBody?.content ?? {}))
          visit(content.schema, `${method} ${path} body`, false);
      }
    expect(wrong).toEqual([]);
    expect(body.components.schemas.SearchTokensDto.required).toEqual(['query']);
    expect(body.components.schemas.SearchTokensDto.properties.page).toMatchObject({ example: 1 });
  });

  it('describes the tokenize answer: a token object, or the request shape of token ids and token objects', async () => {
    const { body } = await request(t.http).get('/openapi.json').expect(200);
    const answer = body.paths['/tokenize'].post.responses['201'].content['application/json'].schema;
    expect(answer.anyOf).toEqual([
      { $ref: '#/components/schemas/TokenObjectDto' },
      { type: 'object', additionalProperties: { $ref: '#/components/schemas/TokenizedValue' } },
      { type: 'array', items: { $ref: '#/components/schemas/TokenizedValue' } },
    ]);
    expect(body.components.schemas.TokenizedValue.anyOf).toContainEqual({ type: 'string' });
    expect(JSON.stringify(body)).not.toContain('x-component-schemas');
  });

  it('cites no document outside the repository', async () => {
    const { body } = await request(t.http).get('/openapi.json').expect(200);
    const text = JSON.stringify(body);
    for (const citation of [/contract/i, /\bsections? \d/i, /interface document/i, /shared\//i]) {
      const found = citation.exec(text);
      expect({
        citation: String(citation),
        found: found && text.slice(found.index - 60, found.index + 40),
      }).toEqual({ citation: String(citation), found: null });
    }
  });
});
