import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../test/support/controller-app';
import { ImportsController } from './imports.controller';
import { ImportsService } from './imports.service';

describe('ImportsController', () => {
  const imports = fakeOf<ImportsService>(['key', 'create', 'get', 'results']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([ImportsController], [{ provide: ImportsService, useValue: imports }]);
  });
  afterAll(() => ctx.close());

  const job = {
    id: ID,
    status: 'pending',
    format: 'csv',
    total: null,
    imported: 0,
    duplicates: 0,
    failed: 0,
    created_at: '2030-01-01T00:00:00.000Z',
    started_at: null,
    completed_at: null,
    error: null,
  };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'get',
        path: '/tokens/imports/key',
        kind: 'management',
        permissions: ['token:import'],
        answer: {
          public_key: '-----BEGIN PGP PUBLIC KEY BLOCK-----',
          fingerprint: 'AB',
          algorithm: 'x',
          created_at: 'y',
        },
        reaches: () => imports.key,
        calledWith: ({ origin }) => [origin],
      },
      {
        method: 'post',
        path: '/tokens/imports',
        kind: 'management',
        permissions: ['token:import'],
        query: { format: 'jsonl' },
        invalid: { query: { format: 'xml' }, field: 'format' },
        status: 202,
        answer: job,
        reaches: () => imports.create,
        // The request itself is the body's stream; its media type is the service's to check.
        calledWith: ({ origin }) => [origin, { body: expect.anything(), contentType: undefined }, 'jsonl'],
      },
      {
        method: 'get',
        path: `/tokens/imports/${ID}`,
        kind: 'management',
        permissions: ['token:import'],
        answer: job,
        reaches: () => imports.get,
        calledWith: ({ who }) => [who, ID],
      },
      {
        method: 'get',
        path: `/tokens/imports/${ID}/results`,
        kind: 'management',
        permissions: ['token:import'],
        query: { page: '2', size: '10' },
        invalid: { query: { size: '1000' }, field: 'size' },
        answer: { pagination: { total_items: 0, page_number: 2, page_size: 10, total_pages: 0 }, data: [] },
        reaches: () => imports.results,
        calledWith: ({ who }) => [who, ID, { page: 2, size: 10 }],
      },
    ],
  );
});
