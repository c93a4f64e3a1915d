import type { FieldErrors } from '../../common/errors/problem.exception';
import { parseSearchQuery } from './token-search';

describe('parseSearchQuery', () => {
  it('parses every field, quoted values included', () => {
    const errors: FieldErrors = {};
    const filters = parseSearchQuery(
      'type:card  container:/pci/ metadata.customer_id:"c 42" data:4242 fingerprint:abc id:11111111-1111-1111-1111-111111111111',
      errors,
    );
    expect(errors).toEqual({});
    expect(filters).toEqual({
      ids: ['11111111-1111-1111-1111-111111111111'],
      types: ['card'],
      fingerprints: ['abc'],
      containers: ['/pci/'],
      metadata: [['customer_id', 'c 42']],
      dataValues: ['4242'],
    });
  });

  it.each(['type', 'type:"open', 'colour:red', 'id:12', 'type:card ???'])('rejects %j', (query) => {
    const errors: FieldErrors = {};
    parseSearchQuery(query, errors);
    expect(errors.query?.length).toBeGreaterThan(0);
  });
});
