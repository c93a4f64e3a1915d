import { Inject, Injectable, Provider } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import type { ConnectionEnvironment } from '../formulas/environments';
import type { Processor, ProcessorPort, VendorHooks, VendorSettings } from './processor.port';
import { SANDBOX_PROCESSORS } from './sandbox-vendors';
import { AdyenProcessor } from './adyen/adyen.processor';
import { BraintreeProcessor } from './braintree/braintree.processor';
import { CheckoutProcessor } from './checkout/checkout.processor';
import { StripeProcessor } from './stripe/stripe.processor';

/**
 * Vendor adapters: a class implementing ProcessorPort (and the VendorHooks it needs) against the
 * vendor's own API, serving the formula's `test` and `live` connections (the key or endpoint the
 * merchant gives tells them apart).
 */
export const VENDOR_PROCESSORS: {
  readonly formula: string;
  new (settings: VendorSettings): ProcessorPort & VendorHooks;
}[] = [StripeProcessor, AdyenProcessor, CheckoutProcessor, BraintreeProcessor];

const VENDOR_ENVIRONMENTS = ['test', 'live'] as const;

/** Injection tokens of the processors the registry is built from. */
export const SANDBOXES = Symbol('sandbox processors');
export const VENDOR_ADAPTERS = Symbol('vendor adapters');

/** A vendor adapter with the key it is found by: `<formula>:<environment>`. */
interface VendorAdapter {
  key: string;
  processor: Processor;
}

/** The settings of a vendor adapter for one environment, from the configuration. */
export function vendorSettings(
  config: AppConfig,
  formula: string,
  environment: 'test' | 'live',
): VendorSettings {
  return {
    environment,
    baseUrl: config.vendorBaseUrls.get(formula),
    publicBaseUrl: config.publicBaseUrl,
    notificationTimeoutMs: config.VENDOR_NOTIFICATION_TIMEOUT_SECONDS * 1000,
  };
}

/**
 * The processor of a connection: the built-in sandbox of its formula in the `sandbox` environment, the
 * formula's vendor adapter in `test` and `live`. Nest builds every processor (`PROCESSOR_PROVIDERS`) and
 * hands them here.
 */
@Injectable()
export class ProcessorRegistry {
  private readonly sandboxes = new Map<string, Processor>();
  private readonly vendors = new Map<string, Processor>();

  constructor(
    @Inject(SANDBOXES) sandboxes: ProcessorPort[],
    @Inject(VENDOR_ADAPTERS) vendors: VendorAdapter[],
  ) {
    for (const processor of sandboxes) this.sandboxes.set(processor.formulaId, processor);
    for (const { key, processor } of vendors) this.vendors.set(key, processor);
  }

  /** The formulas whose vendor adapters confirm operations by notification (see VendorHooks). */
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

  for(connection: { formulaId: string; environment: ConnectionEnvironment }): Processor {
    const processor =
      connection.environment === 'sandbox'
        ? this.sandboxes.get(connection.formulaId)
        : this.vendors.get(`${connection.formulaId}:${connection.environment}`);
    if (!processor)
      throw new Error(`no processor for formula ${connection.formulaId} (${connection.environment})`);
    return processor;
  }
}

const vendorToken = (formula: string, environment: string): string =>
  `vendor processor ${formula}:${environment}`;

const VENDOR_INSTANCES = VENDOR_PROCESSORS.flatMap((Adapter) =>
  VENDOR_ENVIRONMENTS.map((environment) => ({ Adapter, environment })),
);

/**
 * Every processor and the registry, as Nest providers: one instance of each sandbox class, one of each
 * vendor adapter per environment (its settings from AppConfig), the registry given them all.
 */
export const PROCESSOR_PROVIDERS: Provider[] = [
  ...SANDBOX_PROCESSORS,
  { provide: SANDBOXES, useFactory: (...all: ProcessorPort[]) => all, inject: SANDBOX_PROCESSORS },
  ...VENDOR_INSTANCES.map(({ Adapter, environment }) => ({
    provide: vendorToken(Adapter.formula, environment),
    inject: [AppConfig],
    useFactory: (config: AppConfig) => new Adapter(vendorSettings(config, Adapter.formula, environment)),
  })),
  {
    provide: VENDOR_ADAPTERS,
    inject: VENDOR_INSTANCES.map(({ Adapter, environment }) => vendorToken(Adapter.formula, environment)),
    useFactory: (...all: Processor[]): VendorAdapter[] =>
      VENDOR_INSTANCES.map(({ Adapter, environment }, i) => ({
        key: `${Adapter.formula}:${environment}`,
        processor: all[i],
      })),
  },
  ProcessorRegistry,
];
