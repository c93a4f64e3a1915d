import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import type { ConnectionEnvironment } from '../connections/entities/connection.entity';
import type { ProcessorPort, VendorSettings } from './processor.port';
import { SANDBOX_PROCESSORS } from './sandbox-vendors';
import { AdyenProcessor } from './adyen/adyen.processor';
import { StripeProcessor } from './stripe/stripe.processor';

/**
 * Vendor adapters: a class implementing ProcessorPort against the vendor's own API, serving the
 * formula's `test` and `live` connections (the key or endpoint the merchant gives tells them apart).
 */
export const VENDOR_PROCESSORS: {
  readonly formula: string;
  new (settings: VendorSettings): ProcessorPort;
}[] = [StripeProcessor, AdyenProcessor];

/**
 * The processor of a connection: the built-in sandbox of its formula in the `sandbox` environment, the
 * formula's vendor adapter in `test` and `live`.
 */
@Injectable()
export class ProcessorRegistry {
  private readonly sandboxes = new Map<string, ProcessorPort>();
  private readonly vendors = new Map<string, ProcessorPort>();

  constructor(config: AppConfig) {
    for (const Processor of SANDBOX_PROCESSORS) {
      const processor = new Processor();
      this.sandboxes.set(processor.formulaId, processor);
    }
    const baseUrls = config.vendorBaseUrls;
    for (const Processor of VENDOR_PROCESSORS)
      for (const environment of ['test', 'live'] as const) {
        const settings = {
          environment,
          baseUrl: baseUrls.get(Processor.formula),
          publicBaseUrl: config.publicBaseUrl,
          notificationTimeoutMs: config.VENDOR_NOTIFICATION_TIMEOUT_SECONDS * 1000,
        };
        this.vendors.set(`${Processor.formula}:${environment}`, new Processor(settings));
      }
  }

  /** The formulas whose vendor adapters confirm operations by notification (see ProcessorPort). */
  notificationFormulas(): string[] {
    const formulas = [...this.vendors.values()]
      .filter((p) => p.confirmsByNotification)
      .map((p) => p.formulaId);
    return [...new Set(formulas)].sort();
  }

  /** The formulas that have a vendor adapter (the only ones with `test` and `live` environments). */
  vendorFormulas(): string[] {
    return VENDOR_PROCESSORS.map((p) => p.formula).sort();
  }

  for(connection: { formulaId: string; environment: ConnectionEnvironment }): ProcessorPort {
    const processor =
      connection.environment === 'sandbox'
        ? this.sandboxes.get(connection.formulaId)
        : this.vendors.get(`${connection.formulaId}:${connection.environment}`);
    if (!processor)
      throw new Error(`no processor for formula ${connection.formulaId} (${connection.environment})`);
    return processor;
  }
}
