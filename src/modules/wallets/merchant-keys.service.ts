import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuditEntry } from '../../common/audit/audit.types';
import type { Principal } from '../../common/auth/principal';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { Clock } from '../../common/jobs/clock';
import type { OffsetPaginationQueryDto } from '../../common/pagination/offset-pagination.dto';
import { offsetOf, offsetPage } from '../../common/pagination/offset-pagination';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { publicKeyHashOf } from './apple-pay/apple-pay-ec-v1';
import type {
  CreatedApplePayKeyDto,
  CreateGooglePayKeyDto,
  MerchantKeyDto,
  MerchantKeyPageDto,
} from './dto/merchant-key.dto';
import type { Wallet, WalletMerchantKeyEntity } from './entities/wallet-merchant-key.entity';
import {
  certificateFacts,
  certificateSigningRequest,
  generateMerchantKeyPair,
  sealMerchantKey,
  uncompressedPoint,
} from './merchant-key-material';
import { WalletsErrorCode, WalletsException } from './wallets.errors';
import { MAX_ACTIVE_KEYS, WalletsRepository } from './wallets.repository';

/** A merchant key as the API shows it: never its private half. */
export function merchantKeyDto(key: WalletMerchantKeyEntity): MerchantKeyDto {
  return {
    id: key.id,
    wallet: key.wallet,
    status: key.status,
    public_key: uncompressedPoint(key.publicKey),
    public_key_hash: key.wallet === 'apple_pay' ? publicKeyHashOf(key.publicKey) : null,
    merchant_identifier: key.merchantIdentifier,
    not_after: key.notAfter?.toISOString() ?? null,
    gateway_merchant_id: key.gatewayMerchantId,
    created_by: key.createdBy,
    created_at: key.createdAt.toISOString(),
  };
}

const WALLET_NAMES: Record<Wallet, string> = { apple_pay: 'Apple Pay', google_pay: 'Google Pay' };

/** The audit row of a write to a merchant key: what happened, never any of the key. */
const entry = (
  key: Pick<WalletMerchantKeyEntity, 'id' | 'wallet'>,
  operation: AuditEntry['operation'],
  what: string,
): AuditEntry => ({
  entityType: 'wallet_key',
  entityId: key.id,
  operation,
  message: `${WALLET_NAMES[key.wallet]} merchant key ${what}`,
});

/** Tries of an insert or activation that lost its slot to a concurrent one before it answers 409. */
const SLOT_TRIES = 3;

/** PostgreSQL's unique_violation: two activations took the same free slot at once. */
const isUniqueViolation = (error: unknown): boolean =>
  (error as { code?: unknown; driverError?: { code?: unknown } }).code === '23505' ||
  (error as { driverError?: { code?: unknown } }).driverError?.code === '23505';

/**
 * The tenants' Apple Pay and Google Pay merchant keys (docs/wallets.md): made here, their private half
 * sealed under the tenant's key and never answered; at most 5 active per tenant and wallet.
 */
@Injectable()
export class MerchantKeysService {
  constructor(
    private readonly keys: WalletsRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
  ) {}

  /** A pending Apple Pay key and its CSR, to have Apple issue its payment processing certificate. */
  async createApplePay(origin: RequestOrigin): Promise<CreatedApplePayKeyDto> {
    const key = await this.newKey(origin.actor, 'apple_pay', null);
    const csr = await certificateSigningRequest(key.pair, key.row.id);
    return this.work.transaction(origin, async (change) => {
      await this.keys.insertPending(change, key.row);
      change.audit(entry(key.row, 'create', 'created (waiting for its certificate)'));
      return { ...merchantKeyDto(key.row), csr };
    });
  }

  /**
   * Gives an Apple Pay key the certificate Apple issued for its CSR: the certificate must be for this
   * key (else a 400 naming `certificate`); its merchant identifier field is recorded and the key is
   * active from then on (a 6th active key: 409 `too_many_keys`). An active key's certificate is
   * replaced (a renewal), its place kept.
   */
  async setCertificate(origin: RequestOrigin, id: string, pem: string): Promise<MerchantKeyDto> {
    const who = origin.actor;
    const existing = await this.keys.findOne(who.tenantId, 'apple_pay', id);
    if (!existing) throw WalletsException.notFound();
    const facts = certificateFacts(pem, existing.publicKey, this.clock.now());
    return this.withSlot(() =>
      this.work.transaction(origin, async (change) => {
        const locked = await this.keys.findLocked(change, who.tenantId, 'apple_pay', id);
        if (!locked) throw WalletsException.notFound();
        const key = await this.keys.activate(change, who.tenantId, id, {
          certificate: facts.pem,
          merchantIdentifier: facts.merchantIdentifier,
          notAfter: facts.notAfter,
        });
        if (!key) throw WalletsException.tooManyKeys(MAX_ACTIVE_KEYS);
        change.audit(entry(key, 'update', locked.status === 'active' ? 'certificate replaced' : 'activated'));
        return merchantKeyDto(key);
      }),
    );
  }

  /** An active Google Pay key for the gateway merchant id; its public key to register with Google. */
  async createGooglePay(origin: RequestOrigin, dto: CreateGooglePayKeyDto): Promise<MerchantKeyDto> {
    const { row } = await this.newKey(origin.actor, 'google_pay', dto.gateway_merchant_id);
    return this.withSlot(() =>
      this.work.transaction(origin, async (change) => {
        if (!(await this.keys.insertActive(change, row))) throw WalletsException.tooManyKeys(MAX_ACTIVE_KEYS);
        change.audit(entry(row, 'create', 'created'));
        return merchantKeyDto({ ...row, status: 'active' });
      }),
    );
  }

  async list(who: Principal, wallet: Wallet, query: OffsetPaginationQueryDto): Promise<MerchantKeyPageDto> {
    const { skip, take } = offsetOf(query);
    const { total, rows } = await this.keys.page(who.tenantId, wallet, skip, take);
    return offsetPage(rows.map(merchantKeyDto), total, query);
  }

  async get(who: Principal, wallet: Wallet, id: string): Promise<MerchantKeyDto> {
    const key = await this.keys.findOne(who.tenantId, wallet, id);
    if (!key) throw WalletsException.notFound();
    return merchantKeyDto(key);
  }

  /** Deletes the key, its private half with it: payloads encrypted to it no longer decrypt. */
  async delete(origin: RequestOrigin, wallet: Wallet, id: string): Promise<void> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      if (!(await this.keys.delete(change, who.tenantId, wallet, id))) throw WalletsException.notFound();
      change.audit(entry({ id, wallet }, 'delete', 'deleted'));
    });
  }

  /** A new key pair and its row (the private half sealed), settled before any change opens. */
  private async newKey(who: Principal, wallet: Wallet, gatewayMerchantId: string | null) {
    const id = randomUUID();
    const pair = generateMerchantKeyPair();
    const { encryption } = await this.tenantKeys.keysFor(who.tenantId);
    const row: WalletMerchantKeyEntity = {
      tenantId: who.tenantId,
      id,
      wallet,
      status: 'pending',
      slot: null,
      privateKey: sealMerchantKey(encryption, who.tenantId, id, pair.privateKey),
      publicKey: pair.publicKey,
      certificate: null,
      merchantIdentifier: null,
      notAfter: null,
      gatewayMerchantId,
      createdBy: who.applicationId,
      createdAt: this.clock.now(),
    };
    return { row, pair };
  }

  /**
   * Runs a change that takes a free slot; one that lost its slot to a concurrent change (a unique
   * violation, or nothing written) is run again, up to SLOT_TRIES, before the 409 stands.
   */
  private async withSlot<T>(run: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await run();
      } catch (error) {
        const lost =
          isUniqueViolation(error) ||
          (error instanceof WalletsException && error.code === WalletsErrorCode.TooManyKeys);
        if (!lost || tries >= SLOT_TRIES) {
          if (isUniqueViolation(error)) throw WalletsException.tooManyKeys(MAX_ACTIVE_KEYS);
          throw error;
        }
      }
    }
  }
}
