import { Injectable } from '@nestjs/common';
import { createHmac, type KeyObject } from 'node:crypto';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { ValidationException } from '../../common/errors/domain.exception';
import { Clock } from '../../common/jobs/clock';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import type { TokenDto } from '../tokens/token-answer';
import { TokenizeService } from '../tokens/tokenize/tokenize.service';
import {
  decryptApplePay,
  publicKeyHashOf,
  SIGNING_TIME_TOLERANCE_MS,
  verifyApplePay,
} from './apple-pay/apple-pay-ec-v1';
import type { Wallet, WalletMerchantKeyEntity } from './entities/wallet-merchant-key.entity';
import { decryptGooglePayEcv2 } from './google-pay/google-pay-ecv2';
import { openMerchantKey } from './merchant-key-material';
import { WalletError } from './wallet-error';
import { WalletRoots } from './wallet-roots';
import { WalletsException } from './wallets.errors';
import { WalletsRepository } from './wallets.repository';

/** The card a payload held, as the tokens module takes it (no payload detail beyond these). */
interface WalletCard {
  number: string;
  expirationMonth: number;
  expirationYear: number;
  cryptogram?: string;
  eci?: string;
}

/**
 * Wallet payloads made into tokens (docs/wallets.md): each is verified before anything is decrypted,
 * decrypted with one of the tenant's active merchant keys, and made into a `network_token` (a card
 * token for Google's PAN_ONLY) through the tokenize path, its transaction id recorded in the same change
 * so that a replay is a 409 and a refused payload never uses its id up.
 */
@Injectable()
export class WalletTokensService {
  constructor(
    private readonly keys: WalletsRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly tokenize: TokenizeService,
    private readonly roots: WalletRoots,
    private readonly clock: Clock,
  ) {}

  async applePay(origin: RequestOrigin, paymentData: unknown): Promise<TokenDto> {
    const tenantId = origin.actor.tenantId;
    const verified = await verifyApplePay(paymentData, { roots: this.roots.apple, now: this.clock.now() });
    const active = await this.keys.activeKeys(tenantId, 'apple_pay');
    const key = active.find(
      (candidate) =>
        candidate.merchantIdentifier !== null &&
        publicKeyHashOf(candidate.publicKey) === verified.header.publicKeyHash,
    );
    if (!key) throw new WalletError('wallet_key_unknown');
    const card = decryptApplePay(verified, {
      privateKey: await this.privateKeyOf(key),
      merchantIdHash: Buffer.from(key.merchantIdentifier!, 'hex'),
    });
    const acceptedUntil = new Date(verified.signingTime.getTime() + SIGNING_TIME_TOLERANCE_MS);
    return this.create(origin, 'apple_pay', { id: verified.header.transactionId, acceptedUntil }, card);
  }

  async googlePay(origin: RequestOrigin, token: string): Promise<TokenDto> {
    const rootKeys = this.roots.google;
    if (!rootKeys) throw WalletsException.googlePayNotConfigured();
    const tenantId = origin.actor.tenantId;
    const active = await this.keys.activeKeys(tenantId, 'google_pay');
    if (!active.length) throw new WalletError('wallet_key_unknown');
    const recipients = await Promise.all(
      active.map(async (key) => ({
        recipientId: `gateway:${key.gatewayMerchantId}`,
        privateKey: await this.privateKeyOf(key),
        keyId: key.id,
      })),
    );
    const message = decryptGooglePayEcv2(token, {
      rootKeys: [...rootKeys],
      recipients,
      now: this.clock.now(),
    });
    const details = message.paymentMethodDetails;
    const card: WalletCard = {
      number: details.pan,
      expirationMonth: details.expirationMonth,
      expirationYear: details.expirationYear,
      ...(details.authMethod === 'CRYPTOGRAM_3DS' && details.cryptogram
        ? { cryptogram: details.cryptogram }
        : {}),
      ...(details.eciIndicator && /^\d{1,2}$/.test(details.eciIndicator)
        ? { eci: details.eciIndicator }
        : {}),
    };
    return this.create(
      origin,
      'google_pay',
      { id: message.messageId, acceptedUntil: message.messageExpiration },
      card,
    );
  }

  /**
   * The token: a `network_token` of the wallet (a `card` when the payload holds no cryptogram: Google's
   * PAN_ONLY), with the transaction id recorded in its change.
   */
  private async create(
    origin: RequestOrigin,
    wallet: Wallet,
    transaction: { id: string; acceptedUntil: Date },
    card: WalletCard,
  ): Promise<TokenDto> {
    const tenantId = origin.actor.tenantId;
    const digest = await this.transactionDigest(tenantId, wallet, transaction.id);
    const data = {
      number: card.number,
      expiration_month: card.expirationMonth,
      expiration_year: card.expirationYear,
    };
    const body =
      card.cryptogram === undefined
        ? { type: 'card', data }
        : {
            type: 'network_token',
            data: {
              ...data,
              cryptogram: card.cryptogram,
              ...(card.eci !== undefined ? { eci: card.eci } : {}),
              source: wallet,
            },
          };
    try {
      return await this.tokenize.createOne(origin, body, {
        fromWallet: true,
        alsoWrite: (change, tokenId) =>
          this.keys.recordTransaction(
            change,
            tenantId,
            wallet,
            { digest, tokenId, createdAt: this.clock.now(), expiresAt: transaction.acceptedUntil },
            () => WalletsException.replayed(),
          ),
      });
    } catch (error) {
      // A card the tokens module refuses (an expired DPAN, a number that fails Luhn) came from the
      // payload: refused with the payload's code, not field errors about a body the caller never sent.
      if (error instanceof ValidationException) throw new WalletError('wallet_payload_invalid');
      throw error;
    }
  }

  /** The transaction id under a key of the tenant's (HMAC-SHA256): what the replay guard keeps. */
  private async transactionDigest(tenantId: string, wallet: Wallet, transactionId: string): Promise<Buffer> {
    const { idempotency } = await this.tenantKeys.keysFor(tenantId);
    return createHmac('sha256', idempotency).update(`wallet-transaction:${wallet}:${transactionId}`).digest();
  }

  private async privateKeyOf(key: WalletMerchantKeyEntity): Promise<KeyObject> {
    const { encryption } = await this.tenantKeys.keysFor(key.tenantId);
    return openMerchantKey(encryption, key.tenantId, key.id, key.privateKey);
  }
}
