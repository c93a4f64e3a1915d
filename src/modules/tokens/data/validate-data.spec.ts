import type { FieldErrors } from '../../../common/errors/problem.exception';
import { isAbaRoutingNumber, validateData } from './validate-data';

const NOW = new Date('2026-11-22T00:00:00Z');

function check(type: 'card' | 'bank' | 'token', data: unknown) {
  const errors: FieldErrors = {};
  const result = validateData(type, data, 'data', NOW, errors);
  return { result, errors };
}

describe('card validation', () => {
  const card = { number: '4242 4242-4242 4242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

  it('accepts a valid card, strips separators, masks it and detects the brand', () => {
    const { result, errors } = check('card', card);
    expect(errors).toEqual({});
    expect(result).toEqual({
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
      cvc: '123',
      mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2030 },
      brand: 'visa',
      bin: '42424242',
    });
  });

  it.each([
    [{ ...card, number: '4242424242424241' }, 'data.number', /Luhn/],
    [{ ...card, number: '424242424242' }, 'data.number', /13 to 19/],
    [{ ...card, number: 4242424242424242 }, 'data.number', /string/],
    [{ ...card, expiration_month: 13 }, 'data.expiration_month', /1 to 12/],
    [{ ...card, expiration_year: 30 }, 'data.expiration_year', /four-digit/],
    [{ ...card, expiration_month: 10, expiration_year: 2026 }, 'data.expiration_year', /expired/],
    [{ ...card, cvc: '12' }, 'data.cvc', /3 digits/],
    [{ ...card, number: '378282246310005', cvc: '123' }, 'data.cvc', /4 digits for American Express/],
    [{ ...card, pin: '1234' }, 'data.pin', /not a field/],
  ])('rejects %j at %s', (data, path, message) => {
    const { result, errors } = check('card', data);
    expect(result).toBeUndefined();
    expect(errors[path][0]).toMatch(message);
  });

  it('accepts any 13 to 19 digits that pass Luhn, whatever the brand\'s usual lengths (a 13-digit Visa)', () => {
    const errors: FieldErrors = {};
    validateData('card', { ...card, number: '4222222222222' }, 'data', NOW, errors);
    expect(errors).toEqual({});
  });

  it('accepts the current month', () => {
    expect(check('card', { ...card, expiration_month: 11, expiration_year: 2026 }).errors).toEqual({});
  });

  it('accepts an American Express card with a 4-digit CVC', () => {
    const { result } = check('card', {
      number: '378282246310005',
      expiration_month: 1,
      expiration_year: 2031,
      cvc: '1234',
    });
    expect(result?.brand).toBe('american-express');
    expect(result?.mask).toMatchObject({ number: 'XXXXXXXXXXX0005' });
  });
});

describe('bank validation', () => {
  it('checks the ABA checksum', () => {
    expect(isAbaRoutingNumber('021000021')).toBe(true);
    expect(isAbaRoutingNumber('011000015')).toBe(true);
    expect(isAbaRoutingNumber('021000022')).toBe(false);
    expect(isAbaRoutingNumber('02100002')).toBe(false);
  });

  it('masks the account number', () => {
    const { result } = check('bank', { routing_number: '021000021', account_number: '123456789' });
    expect(result?.mask).toEqual({ routing_number: '021000021', account_number: 'XXXXX6789' });
  });

  it('reports each bad field', () => {
    const { errors } = check('bank', { routing_number: '021000022', account_number: '12' });
    expect(Object.keys(errors).sort()).toEqual(['data.account_number', 'data.routing_number']);
  });
});
