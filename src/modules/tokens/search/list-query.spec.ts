import { ValidationException } from '../../../common/errors/domain.exception';
import { emptyFilters, parseListQuery } from './list-query';

describe('parseListQuery (GET /tokens and GET /v2/tokens)', () => {
  const errorsOf = (query: Record<string, unknown>, version: 'v1' | 'v2'): unknown => {
    try {
      parseListQuery(query, version);
    } catch (error) {
      return (error as ValidationException).errors;
    }
    return undefined;
  };

  it('parses the shared filters and each version its own paging and metadata', () => {
    expect(
      parseListQuery(
        { type: ['card', 'bank'], container: '/pci/', 'metadata.plan': 'gold', page: '2' },
        'v1',
      ),
    ).toEqual({
      filters: {
        ...emptyFilters(),
        types: ['card', 'bank'],
        containers: ['/pci/'],
        metadata: [['plan', 'gold']],
      },
      page: 2,
      size: 20,
    });
    expect(
      parseListQuery({ fingerprint: 'f', metadata: '{"plan":"gold"}', start: 'c', size: '5' }, 'v2'),
    ).toEqual({
      filters: { ...emptyFilters(), fingerprints: ['f'], metadata: [['plan', 'gold']] },
      page: 1,
      size: 5,
      start: 'c',
    });
  });

  it('takes repeated id in v1: at most 100 token ids, uuids in lower case, duplicates once', () => {
    const upper = 'ABCDEF01-2345-4678-9ABC-DEF012345678';
    expect(parseListQuery({ id: ['a_B-1', upper, 'a_B-1'], type: 'card' }, 'v1').filters).toEqual({
      ...emptyFilters(),
      anyOfIds: ['a_B-1', upper.toLowerCase()],
      types: ['card'],
    });
    expect(parseListQuery({ id: 'x'.repeat(400) }, 'v1').filters.anyOfIds).toEqual(['x'.repeat(400)]);
    const hundred = Array.from({ length: 100 }, (_, i) => `t${i}`);
    expect(parseListQuery({ id: hundred }, 'v1').filters.anyOfIds).toHaveLength(100);
    expect(errorsOf({ id: [...hundred, 'one more'] }, 'v1')).toEqual({
      id: ['at most 100 ids; this list has 101'],
    });
    for (const bad of ['a.b', 'a/b', '', 'x'.repeat(401), 'é'])
      expect(errorsOf({ id: ['ok', bad] }, 'v1')).toEqual({
        id: ['each id must be 1 to 400 characters of letters, digits, _ and -'],
      });
    expect(errorsOf({ id: 'a' }, 'v2')).toEqual({ id: ['property id should not exist'] });
  });

  it('names every bad or unknown parameter, each version refusing the other one', () => {
    expect(errorsOf({ page: '0', size: '101', colour: 'red', start: 'x', metadata: '{}' }, 'v1')).toEqual({
      page: ['page must be an integer from 1'],
      size: ['size must be an integer from 1 to 100'],
      colour: ['property colour should not exist'],
      start: ['property start should not exist'],
      metadata: ['property metadata should not exist'],
    });
    expect(errorsOf({ page: '1', 'metadata.k': 'v', metadata: '{"k":1}', type: ['a', ['b']] }, 'v2')).toEqual(
      {
        page: ['property page should not exist'],
        'metadata.k': ['property metadata.k should not exist'],
        metadata: ['metadata must be a JSON object of string values'],
        type: ['type must be a plain value'],
      },
    );
  });
});
