import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { Clock } from '../src/common/jobs/clock';
import { launchChromium } from './support/browser';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS, settleOwn } from './support/orchestration';
import { freePort } from './support/processes';

/**
 * The buyer approval page in a real headless browser (Debian's chromium driven by playwright-core):
 * the server listens on a real port and PUBLIC_BASE_URL points at it, as in production.
 */
describe('buyer approval page (3-D Secure challenge) in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let key: string;
  let connection: string;

  beforeAll(async () => {
    const port = await freePort();
    // No scheduled jobs: with the clock moved on 16 minutes below, this app's settlement job would expire
    // other files' approvals in the shared database.
    t = await startApp({
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      JOBS_ENABLED: 'false',
    });
    await t.app.listen(port, '127.0.0.1');
    const tenant = await newTenant(t);
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    connection = (await newConnection(t, key, { currencies: ['EUR', 'JPY'], countries: ['DE'] })).id;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const challenge = async (intent = 'authorize', amount = 4999, currency = 'EUR') => {
    const token = (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({
          type: 'card',
          data: { number: '4000000000003220', expiration_month: 3, expiration_year: 2031, cvc: '123' },
        })
        .expect(201)
    ).body.id;
    const tx = (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount, currency, connection_id: connection, token, intent })
        .expect(201)
    ).body;
    expect(tx.status).toBe('buyer_approval_pending');
    return tx as { id: string; payment_method: { approval_url: string } };
  };
  const transaction = async (id: string) =>
    (await request(t.http).get(`/orchestration/transactions/${id}`).set('BT-API-KEY', key).expect(200)).body;
  const open = async (url: string): Promise<{ page: Page; status: number | undefined }> => {
    const page = await browser.newPage();
    const response = await page.goto(url);
    return { page, status: response?.status() };
  };

  it('shows the merchant, amount, currency and masked card; Approve authorizes', async () => {
    const tx = await challenge();
    const { page, status } = await open(tx.payment_method.approval_url);
    expect(status).toBe(200);
    expect(await page.textContent('#merchant')).toBe('Stripe test');
    expect(await page.textContent('#amount')).toBe('49.99 EUR');
    expect(await page.textContent('#card')).toBe('•••• 3220');
    const html = await page.content();
    expect(html).not.toContain('4000000000003220');
    await page.click('#approve');
    await page.waitForSelector('#outcome');
    expect(await page.textContent('h1')).toBe('Payment approved');
    const after = await transaction(tx.id);
    expect(after).toMatchObject({
      status: 'authorization_succeeded',
      authorized_amount: 4999,
      three_d_secure: { status: 'complete', method: 'challenge' },
      approval_expires_at: null,
    });
    expect(after.payment_method.approval_url).toBeNull();

    // The link is one-time.
    const again = await open(tx.payment_method.approval_url);
    expect(again.status).toBe(409);
    expect(await again.page.textContent('#outcome')).toContain('already been approved or declined');
    await page.close();
    await again.page.close();
  });

  it('Decline declines; intent capture captures on approval; JPY has no decimals', async () => {
    const declined = await challenge();
    const { page } = await open(declined.payment_method.approval_url);
    await page.click('#decline');
    await page.waitForSelector('#outcome');
    expect(await page.textContent('h1')).toBe('Payment declined');
    expect((await transaction(declined.id)).status).toBe('authorization_declined');
    await page.close();

    const capture = await challenge('capture', 5000, 'JPY');
    const second = await open(capture.payment_method.approval_url);
    expect(await second.page.textContent('#amount')).toBe('5000 JPY');
    await second.page.click('#approve');
    await second.page.waitForSelector('#outcome');
    expect(await transaction(capture.id)).toMatchObject({
      status: 'capture_succeeded',
      captured_amount: 5000,
    });
    await second.page.close();
  });

  it('an expired link shows a clear message and the payment fails; unknown links are 404', async () => {
    const tx = await challenge();
    const clock = t.app.get(Clock);
    clock.advance(16 * 60_000);
    try {
      const { page, status } = await open(tx.payment_method.approval_url);
      expect(status).toBe(410);
      expect(await page.textContent('#outcome')).toContain('expired');
      await page.close();
      await settleOwn(t);
    } finally {
      clock.reset();
    }
    expect(await transaction(tx.id)).toMatchObject({
      status: 'authorization_failed',
      error_code: 'approval_expired',
    });
    const unknown = await open(tx.payment_method.approval_url.replace(/[0-9A-Za-z]{10}$/, 'AAAAAAAAAA'));
    expect(unknown.status).toBe(404);
    await unknown.page.close();
  });

  it('keeps the one-time token out of the server log', async () => {
    const tx = await challenge();
    const { page } = await open(tx.payment_method.approval_url);
    await page.close();
    const token = tx.payment_method.approval_url.split('/').pop()!;
    const logs = t.logs.join('\n');
    expect(logs).toContain('/orchestration/approvals/[redacted]');
    expect(logs).not.toContain(token);
  });
});
