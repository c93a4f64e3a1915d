/*
 * A merchant's classic script using the global `VaultElements` (elements.js): type-checked against
 * elements.d.ts by `tsc -p elements` (which includes the declarations: the global is theirs); each
 * @ts-expect-error is a mistake the declarations must catch.
 * Never run.
 */

async function checkout(): Promise<void> {
  const elements = await VaultElements.init('key_pub_x', {
    baseUrl: 'https://vault.example',
    applicationId: 'app',
  });
  const card = elements.createElement('card', {
    style: {
      base: { color: '#1a1a1a', fontSize: '16px', '::placeholder': { color: '#777' } },
      invalid: { color: 'red' },
    },
    placeholder: { number: 'Card number' },
  });
  await card.mount('#card');
  card.on('change', (e) => {
    const complete: boolean = e.complete;
    const brand: string | null = e.cardBrand;
    const last4: string | undefined = e.cardLast4;
    for (const error of e.errors) {
      const field: 'number' | 'expiration_date' | 'cvc' = error.field;
      const type: 'incomplete' | 'invalid' = error.type;
      void [field, type];
    }
    void [complete, brand, last4];
  });
  card.on('error', (e) => console.log(e.error.code, e.error.message));
  card.off('focus', () => undefined);
  const token: VaultElements.Token = await elements.tokens.create({
    type: 'card',
    data: card,
    metadata: { order: '42' },
  });
  void token.id;

  // @ts-expect-error: not an element type
  elements.createElement('iban');
  // @ts-expect-error: not an event
  card.on('input', () => undefined);
  // @ts-expect-error: not an allowed style property
  elements.createElement('cardNumber', { style: { base: { backgroundImage: 'none' } } });
  // @ts-expect-error: a card element has no month()
  card.month(); // eslint-disable-line @typescript-eslint/no-unsafe-call
  const values = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };
  // @ts-expect-error: data must come from elements, never values
  await elements.tokens.create({ type: 'card', data: values });
  // @ts-expect-error: only card tokens
  await elements.tokens.create({ type: 'token', data: card });
  // @ts-expect-error: applicationId is required
  await VaultElements.init('key', { baseUrl: 'https://vault.example' });
}

void checkout;
