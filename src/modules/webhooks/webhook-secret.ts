import { randomBytes } from 'node:crypto';
import { open, seal } from '../../common/crypto/aead';

/**
 * A webhook's signing secret: `whsec_<base64 of 32 random bytes>`, shown once in
 * the create response; stored sealed under the tenant's key, bound to the tenant and the webhook.
 */
export const generateWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

const secretAad = (tenantId: string, webhookId: string): string => `webhook-secret:${tenantId}:${webhookId}`;

export function sealWebhookSecret(key: Buffer, tenantId: string, webhookId: string, secret: string): Buffer {
  return seal(key, Buffer.from(secret, 'utf8'), secretAad(tenantId, webhookId));
}

export function openWebhookSecret(key: Buffer, tenantId: string, webhookId: string, sealed: Buffer): string {
  return open(key, sealed, secretAad(tenantId, webhookId)).toString('utf8');
}
