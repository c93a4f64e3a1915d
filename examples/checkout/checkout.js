/// <reference lib="dom" />
// A browser script, not a module: the published declarations come by reference (type-checked by
// `tsc -p examples`).
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="../../elements/elements.d.ts" />
/* global VaultElements, document */
/*
 * The checkout page's script. The card is typed in the vault's iframe: this script only ever sees its
 * state (complete, errors by part, brand, last four) and the token the vault answers.
 */

const MESSAGES = {
  number: { incomplete: 'The card number is incomplete.', invalid: 'The card number is not valid.' },
  expiration_date: { incomplete: 'The expiry date is incomplete.', invalid: 'The expiry date is not valid.' },
  cvc: { incomplete: 'The security code is incomplete.', invalid: 'The security code is not valid.' },
};

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

async function main() {
  const config = document.body.dataset;
  const box = $('card');
  const errors = $('errors');
  const pay = /** @type {HTMLButtonElement} */ ($('pay'));
  const result = $('result');

  /** @type {VaultElements.Elements} */
  let elements;
  try {
    elements = await VaultElements.init(config.publicKey || '', {
      baseUrl: config.vaultUrl || '',
      applicationId: config.applicationId || '',
    });
  } catch (error) {
    errors.textContent = `Payment is unavailable: ${error instanceof Error ? error.message : String(error)}`;
    return;
  }

  const card = elements.createElement('card', {
    style: {
      base: {
        color: '#1a1a1a',
        fontSize: '16px',
        fontFamily: 'system-ui, sans-serif',
        '::placeholder': { color: '#6b7280' },
      },
      invalid: { color: '#c0392b' },
    },
  });
  /** @type {VaultElements.ChangeEvent | null} */
  let last = null;
  card.on('change', (event) => {
    last = event;
    pay.disabled = !event.complete;
    // Only parts the buyer got wrong, not those still being typed.
    const wrong = event.errors.filter((e) => e.type === 'invalid');
    errors.textContent = wrong.map((e) => MESSAGES[e.field][e.type]).join(' ');
    box.classList.toggle('invalid', wrong.length > 0);
  });
  card.on('focus', () => box.classList.add('focused'));
  card.on('blur', () => {
    box.classList.remove('focused');
    if (last && !last.empty) errors.textContent = last.errors.map((e) => MESSAGES[e.field][e.type]).join(' ');
  });
  card.on('error', (event) => (errors.textContent = event.error.message));
  await card.mount(box);

  $('payment').addEventListener('submit', (event) => {
    event.preventDefault();
    void submit();
  });

  async function submit() {
    pay.disabled = true;
    result.textContent = 'Processing…';
    try {
      const token = await elements.tokens.create({ type: 'card', data: card, metadata: { order: '42' } });
      // A real shop sends token.id to its own server, which charges it with a private key.
      result.textContent = `Card saved as token ${token.id} (${token.mask?.number ?? ''}).`;
      card.clear();
    } catch (error) {
      const problem = /** @type {VaultElements.VaultElementsError} */ (error);
      result.textContent = `The payment failed: ${problem.problem?.detail ?? problem.message}`;
      pay.disabled = !(last && last.complete);
    }
  }
}

void main();
