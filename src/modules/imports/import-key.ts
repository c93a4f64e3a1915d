import * as openpgp from 'openpgp';
import { open, seal } from '../../common/crypto/aead';
import type { TenantKeys } from '../../common/crypto/tenant-keys.service';
import type { ImportKeyRow } from './imports.repository';

/**
 * A tenant's OpenPGP import key: Ed25519 (signing, the primary key) with an X25519 encryption subkey, in
 * the v4 format every OpenPGP tool reads (GnuPG's `ed25519/cv25519`). The private key is kept armored,
 * without a passphrase, sealed (AES-256-GCM) under the tenant's encryption key, bound to its tenant.
 */
export const IMPORT_KEY_ALGORITHM = 'ed25519/cv25519';

const privateAad = (tenantId: string): string => `import-key:${tenantId}`;

/** A new key for the tenant, ready to store. */
export async function newImportKey(tenantId: string, keys: TenantKeys, now: Date): Promise<ImportKeyRow> {
  const { privateKey, publicKey } = await openpgp.generateKey({
    type: 'ecc',
    curve: 'curve25519Legacy',
    userIDs: [{ name: 'Token vault import key', comment: tenantId }],
    date: now,
    format: 'armored',
  });
  const key = await openpgp.readKey({ armoredKey: publicKey });
  return {
    tenant_id: tenantId,
    fingerprint: key.getFingerprint(),
    algorithm: IMPORT_KEY_ALGORITHM,
    public_key: publicKey,
    private_key: seal(keys.encryption, Buffer.from(privateKey, 'utf8'), privateAad(tenantId)),
    created_at: now,
  };
}

/** The private key of a stored import key, opened. */
export function privateKeyOf(row: ImportKeyRow, keys: TenantKeys): Promise<openpgp.PrivateKey> {
  const armored = open(keys.encryption, row.private_key, privateAad(row.tenant_id)).toString('utf8');
  return openpgp.readPrivateKey({ armoredKey: armored });
}

/** The associated data of a line's sealed processor token: its tenant, import and line. */
export const connectionAad = (tenantId: string, importId: string, line: number): string =>
  `import-connection:${tenantId}:${importId}:${line}`;

export const sealConnection = (keys: TenantKeys, aad: string, value: unknown): Buffer =>
  seal(keys.encryption, Buffer.from(JSON.stringify(value)), aad);
