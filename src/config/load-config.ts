import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync, type ValidationError } from 'class-validator';
import { AppConfig } from './app-config';

export class ConfigError extends Error {}

/** Every variable the service reads from its environment. */
export function knownVariables(): string[] {
  const withDefaults = Object.keys(new AppConfig()).filter((name) => name === name.toUpperCase());
  return [
    ...withDefaults,
    'DATABASE_URL',
    'DATABASE_LISTEN_URL',
    'PUBLIC_BASE_URL',
    'ENCRYPTION_KEYS',
    'AUDIT_SIGNING_KEY',
    'CORS_ORIGINS',
    'OUTBOUND_ALLOWED_HOSTS',
    'VENDOR_BASE_URLS',
    'TRUST_PROXY',
    'PKCS11_MODULE',
    'PKCS11_TOKEN_LABEL',
    'PKCS11_PIN',
    'PKCS11_PIN_FILE',
    'APPLE_PAY_ROOT_CA',
    'GOOGLE_PAY_ROOT_KEYS',
  ].filter((name, i, all) => all.indexOf(name) === i);
}

/** The bounds `@Min` and `@Max` give a setting, from class-validator's metadata. */
function bounds(property: string): { min?: number; max?: number } {
  const found: { min?: number; max?: number } = {};
  for (const meta of getMetadataStorage().getTargetValidationMetadatas(AppConfig, '', true, false)) {
    if (meta.propertyName !== property) continue;
    if (meta.name === 'min') found.min = meta.constraints[0] as number;
    if (meta.name === 'max') found.max = meta.constraints[0] as number;
  }
  return found;
}

/**
 * What is wrong with one variable, in one sentence naming it (never its value). A value that is not a
 * whole number fails `@Min` and `@Max` as well: it is told what it must be, range included, once.
 */
function problem(error: ValidationError): string {
  const failed = error.constraints ?? {};
  if (!('isInt' in failed || 'min' in failed || 'max' in failed)) return Object.values(failed).join('; ');
  const { min, max } = bounds(error.property);
  const range =
    min !== undefined && max !== undefined
      ? ` from ${min} to ${max}`
      : min !== undefined
        ? ` of at least ${min}`
        : max !== undefined
          ? ` of at most ${max}`
          : '';
  return `${error.property} must be an integer${range}`;
}

/**
 * Reads and validates the environment; throws a ConfigError naming every bad variable, one line each
 * (one bad variable: one line).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const picked: Record<string, string | undefined> = {};
  for (const name of knownVariables()) {
    if (env[name] !== undefined) picked[name] = env[name];
  }
  const config = plainToInstance(AppConfig, picked, { exposeDefaultValues: true });
  const errors = validateSync(config, { skipMissingProperties: false });
  if (errors.length > 0) {
    throw new ConfigError(errors.map((e) => `Invalid configuration: ${problem(e)}.`).join('\n'));
  }
  return config;
}
