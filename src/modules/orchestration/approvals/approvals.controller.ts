import { Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import type { TransactionRow } from '../transactions/transactions.repository';
import { ApprovalsService } from './approvals.service';
import { ApprovalView, formatAmount, renderApprovalPage } from './approval-page';

const TOKEN_FORMAT = /^[0-9A-Za-z]{40,50}$/;
const RECONCILIATION_FORMAT = /^[0-9A-Za-z]{1,22}$/;

const MESSAGES = {
  unknown: { status: 404, title: 'Link not found', message: 'This approval link is not valid.' },
  used: {
    status: 409,
    title: 'Already answered',
    message: 'This payment has already been approved or declined.',
  },
  expired: {
    status: 410,
    title: 'Link expired',
    message: 'This approval link has expired. The payment was not made.',
  },
  approved: { status: 200, title: 'Payment approved', message: 'Thank you: the payment is approved.' },
  declined: {
    status: 200,
    title: 'Payment declined',
    message: 'The payment was declined. You were not charged.',
  },
  processing: {
    status: 200,
    title: 'Payment being confirmed',
    message: 'Your bank has not confirmed the payment yet. You may close this page.',
  },
  failed: {
    status: 200,
    title: 'Payment failed',
    message: 'The payment could not be completed. You were not charged.',
  },
} as const;

function payment(row: TransactionRow): ApprovalView['payment'] {
  return {
    merchant: row.c_display_name ?? '',
    amount: formatAmount(Number(row.amount), row.currency),
    currency: row.currency,
    card: `•••• ${row.payment_method.label}`,
  };
}

/**
 * The buyer approval page (3-D Secure challenge): no API key, an unguessable one-time token in the URL,
 * plain HTML forms. The token never reaches the logs (see redactUrl).
 */
@ApiExcludeController()
@Controller('orchestration/approvals')
@RequirePermissions([], { public: true })
export class ApprovalsController {
  constructor(private readonly approvals: ApprovalsService) {}

  /**
   * Where a vendor's 3-D Secure page sends the buyer back, with what the vendor appends (Stripe
   * `payment_intent` or `setup_intent`, Adyen `redirectResult`): the vendor's adapter judges it.
   */
  @Get('return/:reconciliationId')
  async vendorReturn(
    @Param('reconciliationId') reconciliationId: string,
    @Query() query: Record<string, unknown>,
    @Res() res: Response,
  ): Promise<void> {
    const params: Record<string, string> = {};
    for (const [name, value] of Object.entries(query)) if (typeof value === 'string') params[name] = value;
    if (!RECONCILIATION_FORMAT.test(reconciliationId) || Object.keys(params).length === 0)
      return this.page(res, 'unknown');
    const { outcome, row } = await this.approvals.returnFromVendor(reconciliationId, params);
    return this.page(res, outcome, row);
  }

  @Get(':token')
  async show(@Param('token') token: string, @Res() res: Response): Promise<void> {
    const found = TOKEN_FORMAT.test(token) ? await this.approvals.find(token) : { state: 'unknown' as const };
    if (found.state !== 'pending' || !found.row)
      return this.page(res, found.state === 'pending' ? 'unknown' : found.state, found.row);
    // A challenge at the vendor: the buyer authenticates on the vendor's page and comes back to the return URL.
    const vendorUrl = await this.approvals.vendorChallengeUrl(found.row);
    if (vendorUrl) {
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Referrer-Policy', 'no-referrer');
      return res.redirect(303, vendorUrl);
    }
    const base = `/orchestration/approvals/${token}`;
    return this.send(res, 200, {
      title: 'Approve your payment',
      payment: payment(found.row),
      actions: { approve: `${base}/approve`, decline: `${base}/decline` },
    });
  }

  @Post(':token/approve')
  approve(@Param('token') token: string, @Res() res: Response): Promise<void> {
    return this.decide(token, true, res);
  }

  @Post(':token/decline')
  decline(@Param('token') token: string, @Res() res: Response): Promise<void> {
    return this.decide(token, false, res);
  }

  private async decide(token: string, approved: boolean, res: Response): Promise<void> {
    if (!TOKEN_FORMAT.test(token)) return this.page(res, 'unknown');
    const { outcome, row } = await this.approvals.decide(token, approved);
    return this.page(res, outcome, row);
  }

  private page(res: Response, state: keyof typeof MESSAGES, row?: TransactionRow): void {
    const { status, title, message } = MESSAGES[state];
    return this.send(res, status, {
      title,
      message,
      ...(row && state !== 'unknown' ? { payment: payment(row) } : {}),
    });
  }

  private send(res: Response, status: number, view: ApprovalView): void {
    res.status(status);
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    res.send(renderApprovalPage(view));
  }
}
