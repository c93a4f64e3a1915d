import { Body, Controller, INestApplication, Post } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import { inMemoryRequest } from '../../test/support/in-memory-http';
import { Script } from 'node:vm';
import { setupOpenApi } from './openapi';

/** Every `$` sequence String.prototype.replace gives a meaning to in a replacement string. */
const DOLLARS = "Quote values with characters other than `_-.@#$`, or $& or $' or $1 or $$ or $<name>.";

class DollarsDto {
  @ApiProperty({ description: DOLLARS, example: 'a $` b' })
  query: string;

  @ApiProperty({ description: 'Page number, from 1.', default: 1, required: true })
  page: number = 1;
}

@Controller('dollars')
class DollarsController {
  @Post()
  search(@Body() body: DollarsDto): DollarsDto {
    return body;
  }
}

/** The Swagger UI's pages as the app serves them (setupOpenApi, as configureApp calls it). */
describe('setupOpenApi', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const module = await Test.createTestingModule({ controllers: [DollarsController] }).compile();
    app = module.createNestApplication({ logger: false });
    setupOpenApi(app);
    await app.init();
  });
  afterAll(() => app.close());

  it('serves a /docs/swagger-ui-init.js that parses, whatever `$` sequences the descriptions hold', async () => {
    const res = await inMemoryRequest(app.getHttpServer()).get('/docs/swagger-ui-init.js').expect(200);
    expect(res.headers['content-type']).toMatch(/javascript/);
    expect(() => new Script(res.text, { filename: 'swagger-ui-init.js' })).not.toThrow();
    // The UI loads the document from /openapi.json rather than from text pasted into the script.
    expect(res.text).toContain('/openapi.json');
    expect(res.text).not.toContain('Quote values');
  });

  it('serves the document at /openapi.json with the descriptions as written', async () => {
    const res = await inMemoryRequest(app.getHttpServer()).get('/openapi.json').expect(200);
    expect(res.body.components.schemas.DollarsDto.properties.query).toMatchObject({
      description: DOLLARS,
      example: 'a $` b',
    });
    const html = await inMemoryRequest(app.getHttpServer()).get('/docs').expect(200);
    expect(html.text).toContain('swagger-ui-init.js');
  });
});
