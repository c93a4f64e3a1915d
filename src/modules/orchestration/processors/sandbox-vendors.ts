import { ids, SandboxProcessor } from './sandbox.processor';

/* One sandbox per vendor: the vendor's test mode, with ids shaped like the vendor's own. */

export class StripeSandbox extends SandboxProcessor {
  readonly formulaId = 'stripe-card';
  protected transactionId = () => `pi_${ids.alnum(24)}`;
  protected refundId = () => `re_${ids.alnum(24)}`;
}

export class AdyenSandbox extends SandboxProcessor {
  readonly formulaId = 'adyen-card';
  protected transactionId = () => ids.upper(16);
  protected refundId = () => ids.upper(16);
}

export class BraintreeSandbox extends SandboxProcessor {
  readonly formulaId = 'braintree-card';
  protected transactionId = () => ids.lower(8);
  protected refundId = () => ids.lower(8);
}

export class CheckoutSandbox extends SandboxProcessor {
  readonly formulaId = 'checkout-card';
  protected transactionId = () => `pay_${ids.lower(26)}`;
  protected refundId = () => `act_${ids.lower(26)}`;
}

export class CybersourceSandbox extends SandboxProcessor {
  readonly formulaId = 'cybersource-card';
  protected transactionId = () => ids.digits(22);
  protected refundId = () => ids.digits(22);
}

export class NuveiSandbox extends SandboxProcessor {
  readonly formulaId = 'nuvei-card';
  protected transactionId = () => ids.digits(19);
  protected refundId = () => ids.digits(19);
}

export class DlocalSandbox extends SandboxProcessor {
  readonly formulaId = 'dlocal-card';
  protected transactionId = () => `D-4-${ids.uuid()}`;
  protected refundId = () => `REF-4-${ids.uuid()}`;
}

export class FiservSandbox extends SandboxProcessor {
  readonly formulaId = 'fiserv-card';
  protected transactionId = () => ids.digits(12);
  protected refundId = () => ids.digits(12);
}

export class ChaseOrbitalSandbox extends SandboxProcessor {
  readonly formulaId = 'chaseorbital-card';
  protected transactionId = () => ids.hex(40).toUpperCase();
  protected refundId = () => ids.hex(40).toUpperCase();
}

export class PowertranzSandbox extends SandboxProcessor {
  readonly formulaId = 'powertranz-card';
  protected transactionId = () => ids.uuid();
  protected refundId = () => ids.uuid();
}

export class WorldpayWpgSandbox extends SandboxProcessor {
  readonly formulaId = 'worldpaywpg-card';
  protected transactionId = () => `order-${ids.alnum(20)}`;
  protected refundId = () => `refund-${ids.alnum(20)}`;
}

export class WorldpayVapSandbox extends SandboxProcessor {
  readonly formulaId = 'worldpayvap-card';
  protected transactionId = () => ids.digits(18);
  protected refundId = () => ids.digits(18);
}

export class AuthorizeNetSandbox extends SandboxProcessor {
  readonly formulaId = 'authorizenet-card';
  protected transactionId = () => ids.digits(11);
  protected refundId = () => ids.digits(11);
}

export class GlobalPaymentsSandbox extends SandboxProcessor {
  readonly formulaId = 'globalpayments-card';
  protected transactionId = () => `TRN_${ids.alnum(30)}`;
  protected refundId = () => `TRN_${ids.alnum(30)}`;
}

export class ElavonSandbox extends SandboxProcessor {
  readonly formulaId = 'elavon-card';
  protected transactionId = () => `${ids.digits(6)}A${ids.digits(2)}-${ids.uuid().toUpperCase()}`;
  protected refundId = () => `${ids.digits(6)}A${ids.digits(2)}-${ids.uuid().toUpperCase()}`;
}

export class NmiSandbox extends SandboxProcessor {
  readonly formulaId = 'nmi-card';
  protected transactionId = () => ids.digits(10);
  protected refundId = () => ids.digits(10);
}

export class MonerisSandbox extends SandboxProcessor {
  readonly formulaId = 'moneris-card';
  protected transactionId = () => `${ids.digits(6)}-0_${ids.digits(2)}`;
  protected refundId = () => `${ids.digits(6)}-0_${ids.digits(2)}`;
}

export class RapydSandbox extends SandboxProcessor {
  readonly formulaId = 'rapyd-card';
  protected transactionId = () => `payment_${ids.hex(32)}`;
  protected refundId = () => `refund_${ids.hex(32)}`;
}

export const SANDBOX_PROCESSORS = [
  StripeSandbox,
  AdyenSandbox,
  BraintreeSandbox,
  CheckoutSandbox,
  CybersourceSandbox,
  NuveiSandbox,
  DlocalSandbox,
  FiservSandbox,
  ChaseOrbitalSandbox,
  PowertranzSandbox,
  WorldpayWpgSandbox,
  WorldpayVapSandbox,
  AuthorizeNetSandbox,
  GlobalPaymentsSandbox,
  ElavonSandbox,
  NmiSandbox,
  MonerisSandbox,
  RapydSandbox,
];
