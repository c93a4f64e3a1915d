import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiResponse } from '@nestjs/swagger';
import { ApiDocs } from '../../../common/api-docs.decorator';
import { problemContent } from '../../../common/errors/problem-details.dto';
import { TokenObjectDto } from '../../tokens/dto/token.dto';
import { CreatedApplePayKeyDto, MerchantKeyDto, MerchantKeyPageDto } from './merchant-key.dto';

/**
 * The OpenAPI description of the wallets routes, one decorator per route, so that the controllers read
 * as routing only. The prose is the API's reference (openapi.json, docs/wallets.md).
 */

const LIMIT = 'A tenant has at most 5 active keys per wallet: a 6th is a 409 with `code` `too_many_keys`.';
const NEVER = 'The private key never leaves the vault: no answer, log or audit row holds it.';

const WALLET_REFUSAL = ApiResponse({
  status: 400,
  description:
    'The payload is refused, nothing created, its transaction id not used up: `code` `wallet_signature_invalid` ' +
    '(a signature, chain, certificate OID or recipient that does not verify), `wallet_expired` (an expired ' +
    'certificate or intermediate key, a signing time over 5 minutes away, an expired message), `wallet_key_unknown` ' +
    '(no active merchant key of the tenant matches) or `wallet_payload_invalid` (malformed, or a ciphertext or tag ' +
    'that fails once the signature verified). The problem holds nothing of the payload.',
  content: problemContent(),
});
const REPLAYED = ApiResponse({
  status: 409,
  description:
    'The payload (its transaction id) was already made into a token of this tenant: `code` `wallet_replayed`.',
  content: problemContent(),
});
const TOO_MANY = ApiResponse({
  status: 409,
  description: 'The wallet has 5 active keys already: `code` `too_many_keys`.',
  content: problemContent(),
});
const PUBLIC_NOTE =
  'Permission `token:create`: public keys and sessions included, so that a checkout page may send the payload ' +
  'directly; their requests count against `PUBLIC_TOKENIZE_PER_MINUTE` as a tokenize does. The answer is the ' +
  'token object, masked; the cryptogram is sealed apart (at most an hour, until its first authorization) and ' +
  'never shown, revealed or proxied.';

const keysOf = (wallet: 'ApplePay' | 'GooglePay', name: string) => ({
  list: () =>
    ApiDocs(
      ApiOperation({
        operationId: `list${wallet}MerchantKeys`,
        summary: `List ${name} merchant keys`,
        description: 'Oldest first.',
      }),
      ApiOkResponse({ type: MerchantKeyPageDto }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({
        operationId: `get${wallet}MerchantKey`,
        summary: `Get a ${name} merchant key (never its private key)`,
      }),
      ApiOkResponse({ type: MerchantKeyDto }),
    ),
  delete: () =>
    ApiDocs(
      ApiOperation({
        operationId: `delete${wallet}MerchantKey`,
        summary: `Delete a ${name} merchant key`,
        description: 'Its private key is deleted with it: payloads encrypted to it no longer decrypt.',
      }),
    ),
});

export const WalletsApi = {
  applePay: {
    ...keysOf('ApplePay', 'Apple Pay'),
    create: () =>
      ApiDocs(
        ApiOperation({
          operationId: 'createApplePayMerchantKey',
          summary: 'Create an Apple Pay merchant key and its CSR',
          description:
            'An EC P-256 key pair, `pending` until its certificate is given: upload `csr` to Apple as the payment ' +
            `processing certificate's request, then PUT the certificate Apple issues. ${NEVER}`,
        }),
        ApiCreatedResponse({ type: CreatedApplePayKeyDto }),
      ),
    certificate: () =>
      ApiDocs(
        ApiOperation({
          operationId: 'setApplePayMerchantKeyCertificate',
          summary: 'Give an Apple Pay merchant key its payment processing certificate',
          description:
            "The certificate's public key must be this key's (else a 400 naming `certificate`); its merchant " +
            'identifier field (OID 1.2.840.113635.100.6.32) is recorded and the key is `active` from then on. ' +
            `Given again, the certificate is replaced (a renewal). ${LIMIT}`,
        }),
        ApiOkResponse({ type: MerchantKeyDto }),
        TOO_MANY,
      ),
  },
  googlePay: {
    ...keysOf('GooglePay', 'Google Pay'),
    create: () =>
      ApiDocs(
        ApiOperation({
          operationId: 'createGooglePayMerchantKey',
          summary: 'Create a Google Pay merchant key',
          description:
            'An EC P-256 key pair, `active` at once, for the gateway merchant id (payloads are signed for ' +
            '`gateway:<gateway_merchant_id>`). Register `public_key` (base64 of the uncompressed point) with ' +
            `Google. ${LIMIT} ${NEVER}`,
        }),
        ApiCreatedResponse({ type: MerchantKeyDto }),
        TOO_MANY,
      ),
  },
  appleToken: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createApplePayToken',
        summary: 'Make an Apple Pay payload into a token',
        description:
          "The `paymentData` of Apple's `PKPaymentToken` (`EC_v1`) is verified (the CMS signature, Apple's " +
          'certificate OIDs, the chain to APPLE_PAY_ROOT_CA, a signing time within 5 minutes), then decrypted ' +
          'with the active merchant key its `publicKeyHash` names, and made into a `network_token` ' +
          `(source \`apple_pay\`). ${PUBLIC_NOTE}`,
      }),
      ApiCreatedResponse({ type: TokenObjectDto }),
      WALLET_REFUSAL,
      REPLAYED,
    ),
  googleToken: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createGooglePayToken',
        summary: 'Make a Google Pay payload into a token',
        description:
          'The `tokenizationData.token` string (`ECv2`) is verified (the intermediate signing key signed by a key ' +
          'of GOOGLE_PAY_ROOT_KEYS and unexpired, the message signature for `gateway:<gateway_merchant_id>` of an ' +
          'active key, `messageExpiration` in the future), then decrypted, and made into a `network_token` ' +
          '(source `google_pay`; `PAN_ONLY` gives a `card` token, with no cryptogram). Without GOOGLE_PAY_ROOT_KEYS: ' +
          `503 \`google_pay_not_configured\`. ${PUBLIC_NOTE}`,
      }),
      ApiCreatedResponse({ type: TokenObjectDto }),
      WALLET_REFUSAL,
      REPLAYED,
      ApiResponse({
        status: 503,
        description: 'GOOGLE_PAY_ROOT_KEYS is not set.',
        content: problemContent(),
      }),
    ),
};
