import { Liquid } from 'liquidjs';

/** The buyer-facing page: server-rendered, escaped by default, no script. */
const engine = new Liquid({
  outputEscape: 'escape',
  strictVariables: true,
  strictFilters: true,
  cache: true,
});

const TEMPLATE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{ title }}</title>
<style>
  body { font-family: system-ui, sans-serif; background: #f4f5f7; margin: 0; padding: 2rem 1rem; color: #1d2433; }
  main { max-width: 26rem; margin: 0 auto; background: #fff; border-radius: 12px; padding: 2rem; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 1.3rem; margin-top: 0; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: .5rem 1rem; }
  dt { color: #5c667a; } dd { margin: 0; font-weight: 600; }
  form { display: inline; }
  button { font-size: 1rem; padding: .7rem 1.4rem; border-radius: 8px; border: 0; cursor: pointer; margin-right: .5rem; }
  .approve { background: #1a7f37; color: #fff; } .decline { background: #e5e7eb; color: #1d2433; }
  .outcome { font-size: 1.1rem; }
</style>
</head>
<body>
<main>
<h1>{{ title }}</h1>
{% if payment %}
<dl>
  <dt>Merchant</dt><dd id="merchant">{{ payment.merchant }}</dd>
  <dt>Amount</dt><dd id="amount">{{ payment.amount }} {{ payment.currency }}</dd>
  <dt>Card</dt><dd id="card">{{ payment.card }}</dd>
</dl>
{% endif %}
{% if actions %}
<p>Confirm this payment to complete your purchase.</p>
<form method="post" action="{{ actions.approve }}"><button class="approve" id="approve" type="submit">Approve</button></form>
<form method="post" action="{{ actions.decline }}"><button class="decline" id="decline" type="submit">Decline</button></form>
{% else %}
<p class="outcome" id="outcome">{{ message }}</p>
{% endif %}
</main>
</body>
</html>
`;

const parsed = engine.parse(TEMPLATE);

export interface ApprovalView {
  title: string;
  message?: string;
  payment?: { merchant: string; amount: string; currency: string; card: string };
  actions?: { approve: string; decline: string };
}

export function renderApprovalPage(view: ApprovalView): string {
  return engine.renderSync(parsed, { message: '', payment: null, actions: null, ...view }) as string;
}

/** Minor units to a decimal string, by the currency's exponent (JPY has none; most have two). */
export function formatAmount(amount: number, currency: string): string {
  const digits =
    new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  return (amount / 10 ** digits).toFixed(digits);
}
