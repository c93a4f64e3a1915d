import { checkAllowedOrigins } from './allowed-origins';

describe('allowed_origins', () => {
  it('takes origins as browsers write them, without duplicates', () => {
    const errors = {};
    expect(
      checkAllowedOrigins(
        'public',
        ['https://shop.example', 'http://127.0.0.1:8080', 'https://shop.example', 'http://[::1]:3000'],
        errors,
      ),
    ).toEqual(['https://shop.example', 'http://127.0.0.1:8080', 'http://[::1]:3000']);
    expect(errors).toEqual({});
  });

  it('names every origin that is not one, by its index', () => {
    const bad = [
      'https://shop.example/',
      'https://shop.example/checkout',
      'HTTPS://SHOP.EXAMPLE',
      'https://shop.example:443',
      'https://*.shop.example',
      'ftp://shop.example',
      'javascript:alert(1)',
      'null',
      'https://user@shop.example',
      'https://shop.example?x=1',
      '',
      42,
    ];
    const errors: Record<string, string[]> = {};
    expect(checkAllowedOrigins('public', ['https://ok.example', ...bad], errors)).toBeUndefined();
    expect(Object.keys(errors).sort()).toEqual(bad.map((_, i) => `allowed_origins[${i + 1}]`).sort());
  });

  it('refuses more than 20, a value that is not a list, and any other application type', () => {
    const many = Array.from({ length: 21 }, (_, i) => `https://s${i}.example`);
    for (const [type, value] of [
      ['public', many],
      ['public', 'https://shop.example'],
      ['private', []],
      ['management', ['https://shop.example']],
    ] as const) {
      const errors: Record<string, string[]> = {};
      expect(checkAllowedOrigins(type, value, errors)).toBeUndefined();
      expect(Object.keys(errors)).toEqual(['allowed_origins']);
    }
  });
});
