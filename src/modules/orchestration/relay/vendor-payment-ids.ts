/**
 * The form of a payment id at each rail with a vendor behind it, checked before anything is recorded so
 * that a mistyped id is a 400 naming `vendor_payment_id` rather than a refund failed at the vendor. The
 * sandbox of a formula checks its vendor's form too; other formulas take any id of the general form.
 */
const FORMS: Record<string, { pattern: RegExp; says: string }> = {
  'stripe-card': {
    pattern: /^(pi|ch|py)_[A-Za-z0-9]{1,96}$/,
    says: 'a Stripe PaymentIntent (pi_…) or charge (ch_… or py_…) id',
  },
  'adyen-card': { pattern: /^[A-Za-z0-9]{16}$/, says: 'an Adyen pspReference (16 letters and digits)' },
  'checkout-card': { pattern: /^pay_\w{26}$/, says: 'a Checkout.com payment id (pay_ and 26 characters)' },
  'braintree-card': {
    pattern: /^[A-Za-z0-9_+/=-]{1,100}$/,
    says: 'a Braintree transaction id (its global id, base64, or its legacy id)',
  },
};

/** Why `id` is no payment id of the formula's vendor, or undefined when it may be one. */
export function vendorPaymentIdProblem(formulaId: string, id: string): string | undefined {
  const form = FORMS[formulaId];
  return form && !form.pattern.test(id) ? `vendor_payment_id must be ${form.says}` : undefined;
}
