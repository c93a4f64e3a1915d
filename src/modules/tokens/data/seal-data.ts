import { open, seal } from '../../../common/crypto/aead';
import { type TenantKeys, UnknownDataKeyError } from '../../../common/crypto/tenant-keys.service';

/** The associated data binds each ciphertext to its tenant, its token and its role (data or CVC). */
const dataAad = (tenantId: string, tokenId: string): string => `${tenantId}:${tokenId}:data`;
const cvcAad = (tenantId: string, tokenId: string): string => `${tenantId}:${tokenId}:cvc`;

interface TokenRef {
  tenant_id: string;
  id: string;
}

/** Generation `generation` of the tenant's data key (from `keysWith`, which reads it when not cached). */
function dataKey(keys: TenantKeys, tenantId: string, generation: number): Buffer {
  const key = keys.dataKeys.get(generation);
  if (!key) throw new UnknownDataKeyError(tenantId, generation);
  return key;
}

/** Sealed under the data key's last generation (`keys.data`): the row records its number as `data_key`. */
export function sealData(keys: TenantKeys, token: TokenRef, data: unknown): Buffer {
  return seal(keys.data.key, Buffer.from(JSON.stringify(data)), dataAad(token.tenant_id, token.id));
}

export function openData(keys: TenantKeys, token: TokenRef & { data: Buffer; data_key: number }): unknown {
  const key = dataKey(keys, token.tenant_id, token.data_key);
  return JSON.parse(open(key, token.data, dataAad(token.tenant_id, token.id)).toString('utf8')) as unknown;
}

export function sealCvc(keys: TenantKeys, token: TokenRef, cvc: string): Buffer {
  return seal(keys.data.key, Buffer.from(cvc), cvcAad(token.tenant_id, token.id));
}

export function openCvc(keys: TenantKeys, token: TokenRef, sealed: { cvc: Buffer; dataKey: number }): string {
  const key = dataKey(keys, token.tenant_id, sealed.dataKey);
  return open(key, sealed.cvc, cvcAad(token.tenant_id, token.id)).toString('utf8');
}

/** A token's data or CVC as a rotation reads it: sealed under `data_key`, to be sealed under `target`. */
interface Stale {
  tenant_id: string;
  id: string;
  sealed: Buffer;
  data_key: number;
  target: number;
}

/**
 * Opened under the generation it is sealed under and sealed again under `target` (`vault keys rotate
 * --tenant-keys`): the same associated data, a fresh IV.
 */
export function reseal(keys: TenantKeys, what: 'data' | 'cvc', stale: Stale): Buffer {
  const aad = (what === 'data' ? dataAad : cvcAad)(stale.tenant_id, stale.id);
  const clear = open(dataKey(keys, stale.tenant_id, stale.data_key), stale.sealed, aad);
  return seal(dataKey(keys, stale.tenant_id, stale.target), clear, aad);
}
