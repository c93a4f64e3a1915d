import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { BASE62 } from '../../../common/auth/api-key';
import { open, seal } from '../../../common/crypto/aead';
import { TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { AppConfig } from '../../../config/app-config';
import type { VendorAction } from '../processors/processor.port';
import type { IssuedApproval, TransactionRow } from './transactions.repository';

/** How long the buyer has to approve on the approval page. */
export const APPROVAL_LIFETIME_MS = 15 * 60_000;

const approvalAad = (tenantId: string, id: string) => `${tenantId}:${id}:approval-token`;
const vendorActionAad = (tenantId: string, id: string) => `${tenantId}:${id}:vendor-action`;

/** The digest an approval token is looked up by (the token itself is stored only sealed). */
export const approvalDigest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/**
 * Buyer approval links (3-D Secure challenges): a 256-bit random token, stored sealed with the tenant's
 * key (so the transaction can show its link again) and as a digest (so the page can find it).
 */
@Injectable()
export class ApprovalLinks {
  constructor(
    private readonly tenantKeys: TenantKeysService,
    private readonly config: AppConfig,
  ) {}

  /** A new link; with the vendor's 3-D Secure page when the vendor gave one to keep (Adyen). */
  async issue(
    tenantId: string,
    transactionId: string,
    createdAt: Date,
    vendorAction?: VendorAction,
  ): Promise<IssuedApproval> {
    const token = BASE62.encode(randomBytes(32));
    const keys = await this.tenantKeys.keysFor(tenantId);
    return {
      tokenDigest: approvalDigest(token),
      sealedToken: seal(keys.encryption, Buffer.from(token, 'utf8'), approvalAad(tenantId, transactionId)),
      expiresAt: new Date(createdAt.getTime() + APPROVAL_LIFETIME_MS),
      sealedVendorAction: vendorAction
        ? seal(
            keys.encryption,
            Buffer.from(JSON.stringify({ url: vendorAction.url }), 'utf8'),
            vendorActionAad(tenantId, transactionId),
          )
        : null,
    };
  }

  /** The vendor's 3-D Secure page kept with the link, if any. */
  async vendorActionOf(row: TransactionRow): Promise<VendorAction | null> {
    if (!row.vendor_action) return null;
    const keys = await this.tenantKeys.keysFor(row.tenant_id);
    const json = open(keys.encryption, row.vendor_action, vendorActionAad(row.tenant_id, row.id)).toString(
      'utf8',
    );
    return JSON.parse(json) as VendorAction;
  }

  /** The page a pending transaction's buyer approves on; null when there is nothing to approve. */
  async urlOf(row: TransactionRow): Promise<string | null> {
    if (row.status !== 'buyer_approval_pending' || !row.approval_token) return null;
    const keys = await this.tenantKeys.keysFor(row.tenant_id);
    const token = open(keys.encryption, row.approval_token, approvalAad(row.tenant_id, row.id)).toString(
      'utf8',
    );
    return `${this.config.publicBaseUrl}/orchestration/approvals/${token}`;
  }
}
