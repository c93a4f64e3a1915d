import { controllerApp, ControllerApp, fakeOf } from '../../../../test/support/controller-app';
import type { TransactionRow } from '../transactions/transactions.repository';
import { ApprovalsController } from './approvals.controller';
import { ApprovalsService } from './approvals.service';

describe('ApprovalsController (public: the buyer has no key)', () => {
  const approvals = fakeOf<ApprovalsService>(['find', 'decide', 'vendorChallengeUrl', 'returnFromVendor']);
  let ctx: ControllerApp;
  const token = 'A'.repeat(43);
  const row = {
    c_display_name: 'Shop',
    amount: '1250',
    currency: 'USD',
    payment_method: { label: '4242' },
  } as unknown as TransactionRow;

  beforeAll(async () => {
    ctx = await controllerApp([ApprovalsController], [{ provide: ApprovalsService, useValue: approvals }]);
  });
  afterAll(() => ctx.close());
  beforeEach(() => jest.clearAllMocks());

  it('shows the page of a pending approval without a key', async () => {
    approvals.find.mockResolvedValueOnce({ state: 'pending', row });
    approvals.vendorChallengeUrl.mockResolvedValueOnce(null);
    const res = await ctx.http.get(`/orchestration/approvals/${token}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toContain(`/orchestration/approvals/${token}/approve`);
    expect(res.text).toContain('Shop');
    expect(res.text).toContain('4242');
    expect(approvals.find).toHaveBeenCalledWith(token);
    // The challenge is looked up for the transaction found.
    expect(approvals.vendorChallengeUrl).toHaveBeenCalledWith(row);
  });

  it('answers 404 for a malformed token without asking the service', async () => {
    const res = await ctx.http.get('/orchestration/approvals/short');
    expect(res.status).toBe(404);
    expect(res.text).toContain('Link not found');
    expect((await ctx.http.post('/orchestration/approvals/short/approve')).status).toBe(404);
    expect(approvals.find).not.toHaveBeenCalled();
    expect(approvals.decide).not.toHaveBeenCalled();
  });

  it('sends the buyer to the vendor challenge when there is one', async () => {
    approvals.find.mockResolvedValueOnce({ state: 'pending', row });
    approvals.vendorChallengeUrl.mockResolvedValueOnce('https://vendor.example/challenge');
    const res = await ctx.http.get(`/orchestration/approvals/${token}`);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('https://vendor.example/challenge');
  });

  it.each([
    ['approve', 'approved', 200, true],
    ['decline', 'declined', 200, false],
  ] as const)(
    'POST %s hands the service the token and the decision (a form post: no JSON needed)',
    async (action, outcome, status, approved) => {
      approvals.decide.mockResolvedValueOnce({ outcome, row });
      const res = await ctx.http
        .post(`/orchestration/approvals/${token}/${action}`)
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send('');
      expect(res.status).toBe(status);
      expect(res.text).toContain(outcome === 'approved' ? 'Payment approved' : 'Payment declined');
      expect(approvals.decide).toHaveBeenCalledTimes(1);
      expect(approvals.decide).toHaveBeenCalledWith(token, approved);
    },
  );

  it('answers 409 and 410 for a used and an expired link', async () => {
    approvals.decide.mockResolvedValueOnce({ outcome: 'used', row });
    expect((await ctx.http.post(`/orchestration/approvals/${token}/approve`)).status).toBe(409);
    approvals.find.mockResolvedValueOnce({ state: 'expired', row });
    expect((await ctx.http.get(`/orchestration/approvals/${token}`)).status).toBe(410);
  });

  it('hands a vendor return with parameters to the service, and refuses one without', async () => {
    approvals.returnFromVendor.mockResolvedValueOnce({ outcome: 'processing', row });
    const res = await ctx.http.get('/orchestration/approvals/return/abc123?redirectResult=x&extra=a&extra=b');
    expect(res.status).toBe(200);
    expect(res.text).toContain('Payment being confirmed');
    // Only the parameters given once (a string, not a list) reach the service.
    expect(approvals.returnFromVendor).toHaveBeenCalledWith('abc123', { redirectResult: 'x' });
    expect((await ctx.http.get('/orchestration/approvals/return/abc123')).status).toBe(404);
    expect(approvals.returnFromVendor).toHaveBeenCalledTimes(1);
  });
});
