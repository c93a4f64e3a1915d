import { open, seal } from '../../../common/crypto/aead';
import type { TenantKeys } from '../../../common/crypto/tenant-keys.service';

/** The associated data binds each ciphertext to its tenant, its token and its role (data or CVC). */
const dataAad = (tenantId: string, tokenId: string): string => `${tenantId}:${tokenId}:data`;
const cvcAad = (tenantId: string, tokenId: string): string => `${tenantId}:${tokenId}:cvc`;

interface TokenRef {
  tenant_id: string;
  id: string;
}

export function sealData(keys: TenantKeys, token: TokenRef, data: unknown): Buffer {
  return seal(keys.encryption, Buffer.from(JSON.stringify(data)), dataAad(token.tenant_id, token.id));
}

export function openData(keys: TenantKeys, token: TokenRef & { data: Buffer }): unknown {
  return JSON.parse(
    open(keys.encryption, token.data, dataAad(token.tenant_id, token.id)).toString('utf8'),
  ) as unknown;
}

export function sealCvc(keys: TenantKeys, token: TokenRef, cvc: string): Buffer {
  return seal(keys.encryption, Buffer.from(cvc), cvcAad(token.tenant_id, token.id));
}

export function openCvc(keys: TenantKeys, token: TokenRef, sealed: Buffer): string {
  return open(keys.encryption, sealed, cvcAad(token.tenant_id, token.id)).toString('utf8');
}
