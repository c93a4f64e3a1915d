import type { FieldErrors } from '../../../common/errors/problem.exception';
import { threeDSecureData } from './transaction-checks';

describe('three_d_secure_data', () => {
  const parse = (value: unknown) => {
    const errors: FieldErrors = {};
    return { data: threeDSecureData(value, errors), errors: Object.keys(errors).sort() };
  };

  it('absent is null; a full one is kept with our field names', () => {
    expect(parse(undefined)).toEqual({ data: null, errors: [] });
    expect(parse(null)).toEqual({ data: null, errors: [] });
    expect(
      parse({
        version: '2.2.0',
        eci: '05',
        cavv: 'AAAB',
        directory_response: 'Y',
        authentication_response: 'N',
        ds_transaction_id: 'c4e59ceb-a382-4d6a-bc87-385d591fa09d',
      }),
    ).toEqual({
      data: {
        version: '2.2.0',
        eci: '05',
        cavv: 'AAAB',
        directoryResponse: 'Y',
        authenticationResponse: 'N',
        dsTransactionId: 'c4e59ceb-a382-4d6a-bc87-385d591fa09d',
      },
      errors: [],
    });
    expect(parse({ version: '1.0.2', eci: '07', cavv: 'x' }).errors).toEqual([]);
  });

  it.each([
    [{ eci: '05', cavv: 'x' }, 'three_d_secure_data.version'],
    [{ version: '2.2', eci: '05', cavv: 'x' }, 'three_d_secure_data.version'],
    [{ version: '2.2.0', eci: '5', cavv: 'x' }, 'three_d_secure_data.eci'],
    [{ version: '2.2.0', eci: '05', cavv: 'x'.repeat(65) }, 'three_d_secure_data.cavv'],
    [{ version: '2.2.0', eci: '05' }, 'three_d_secure_data.cavv'],
    [
      { version: '2.2.0', eci: '05', cavv: 'x', directory_response: 'YY' },
      'three_d_secure_data.directory_response',
    ],
    [
      { version: '2.2.0', eci: '05', cavv: 'x', authentication_response: 1 },
      'three_d_secure_data.authentication_response',
    ],
    [
      { version: '2.2.0', eci: '05', cavv: 'x', ds_transaction_id: 'abc' },
      'three_d_secure_data.ds_transaction_id',
    ],
    [{ version: '2.2.0', eci: '05', cavv: 'x', xid: 'y' }, 'three_d_secure_data'],
    ['2.2.0', 'three_d_secure_data'],
    [[], 'three_d_secure_data'],
  ])('%j names %s, and never repeats a value', (value, field) => {
    const errors: FieldErrors = {};
    expect(threeDSecureData(value, errors)).toBeNull();
    expect(Object.keys(errors)).toContain(field);
    expect(JSON.stringify(errors)).not.toMatch(/xxxx|"abc"|"YY"/);
  });
});
