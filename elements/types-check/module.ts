/*
 * A merchant's ES module importing elements.mjs (typed by elements.d.ts): split fields, month() and
 * year(). Type-checked by `tsc -p elements`; never run.
 */
import VaultElements from '../elements';
import type { ChangeEvent, VaultElementsError } from '../elements';

export async function splitCheckout(key: string): Promise<string> {
  const elements = await VaultElements.init(key, {
    baseUrl: 'https://vault.example',
    applicationId: 'app',
    timeoutMs: 5000,
  });
  const number = elements.createElement('cardNumber', { placeholder: '1234 1234 1234 1234' });
  const expiry = elements.createElement('cardExpirationDate');
  const cvc = elements.createElement('cardVerificationCode');
  await Promise.all([number.mount('#number'), expiry.mount(document.body), cvc.mount('#cvc')]);
  number.on('change', (e: ChangeEvent) => void e.complete);
  try {
    const token = await elements.tokens.create({
      type: 'card',
      data: { number, expiration_month: expiry.month(), expiration_year: expiry.year(), cvc },
    });
    return token.id;
  } catch (error) {
    const failure = error as VaultElementsError;
    return `${failure.code} ${failure.status ?? ''} ${failure.problem?.detail ?? ''}`;
  } finally {
    const swapped = { number, expiration_month: expiry.year(), expiration_year: expiry.year() };
    // @ts-expect-error: the month and the year are not interchangeable
    void elements.tokens.create({ type: 'card', data: swapped });
    const misplaced = { number: cvc, expiration_month: expiry.month(), expiration_year: expiry.year() };
    // @ts-expect-error: a CVC element is not a number
    void elements.tokens.create({ type: 'card', data: misplaced });
    elements.destroy();
  }
}
