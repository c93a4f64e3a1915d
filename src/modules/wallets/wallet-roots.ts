import { Injectable } from '@nestjs/common';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/load-config';
import { loadGooglePayRootKeys, type GooglePayRootKey } from './google-pay/google-pay-ecv2';

/** Apple Root CA - G3, shipped beside this file (SHA-256 63:34:3A:BF:...:91:79, docs/wallets.md). */
export const SHIPPED_APPLE_ROOT = join(__dirname, 'apple-pay', 'apple-root-ca-g3.pem');

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM file; a file without one, or unreadable, is a ConfigError naming the setting. */
export function loadAppleRoots(path: string): X509Certificate[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new ConfigError(`APPLE_PAY_ROOT_CA: ${path} cannot be read`);
  }
  const roots = (text.match(PEM_CERTIFICATE) ?? []).flatMap((pem) => {
    try {
      return [new X509Certificate(pem)];
    } catch {
      throw new ConfigError(`APPLE_PAY_ROOT_CA: ${path} holds a certificate that cannot be parsed`);
    }
  });
  if (!roots.length) throw new ConfigError(`APPLE_PAY_ROOT_CA: ${path} holds no PEM certificate`);
  return roots;
}

/**
 * The roots wallet payloads must chain to, read once at start (a bad file stops the server with a
 * message naming its setting): Apple's from APPLE_PAY_ROOT_CA or the shipped Apple Root CA - G3;
 * Google's from GOOGLE_PAY_ROOT_KEYS, or none (Google Pay payloads are then refused with a problem
 * naming the setting).
 */
@Injectable()
export class WalletRoots {
  readonly apple: readonly X509Certificate[];
  readonly google: readonly GooglePayRootKey[] | undefined;

  constructor(config: AppConfig) {
    this.apple = loadAppleRoots(config.APPLE_PAY_ROOT_CA ?? SHIPPED_APPLE_ROOT);
    this.google = config.GOOGLE_PAY_ROOT_KEYS
      ? loadGooglePayRootKeys(config.GOOGLE_PAY_ROOT_KEYS)
      : undefined;
  }
}
