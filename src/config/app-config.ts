import { resolve } from 'node:path';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateBy,
} from 'class-validator';
import { availableParallelism } from 'node:os';
import { databaseTarget, emptyToUndefined, Integer, OptionalText, toBoolean } from './config-values';
import { invalidTrustProxyEntries, TRUST_PROXY_FORMAT } from './trusted-proxies';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Every setting the service reads from its environment. Validated once at start;
 * a bad value stops the process with a message naming the variable.
 */
export class AppConfig {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  /** PostgreSQL server to use; unset means the embedded PGlite database under DATA_DIR. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  /**
   * A direct connection to the same database for the one session that LISTENs for change notifications,
   * when DATABASE_URL goes through a pooler in transaction mode (PgBouncer), where LISTEN cannot work.
   * Unset: DATABASE_URL.
   */
  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^postgres(ql)?:\/\/\S+$/, {
    message: 'DATABASE_LISTEN_URL must be a postgres:// or postgresql:// URL',
  })
  DATABASE_LISTEN_URL?: string;

  @IsString()
  @MinLength(1)
  DATA_DIR = './data';

  /**
   * Where card imports' uploads (encrypted, as received) wait for their job, deleted when it ends; every
   * instance must see the same directory (docs/migration.md). Unset: `imports` under DATA_DIR.
   */
  @OptionalText()
  IMPORT_DIR?: string;

  @Integer()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  PUBLIC_BASE_URL?: string;

  /**
   * Who holds the master key: `env` (ENCRYPTION_KEYS), `split` (custodians' shares) or `pkcs11` (an HSM;
   * docs/keys.md).
   */
  @IsIn(['env', 'split', 'pkcs11'])
  KEY_PROVIDER: 'env' | 'split' | 'pkcs11' = 'env';

  /** KEY_PROVIDER=pkcs11: the path of the HSM's PKCS#11 module (a shared library). */
  @OptionalText()
  PKCS11_MODULE?: string;

  /** KEY_PROVIDER=pkcs11: the label of the token that holds the key-encrypting keys. */
  @OptionalText()
  PKCS11_TOKEN_LABEL?: string;

  /** KEY_PROVIDER=pkcs11: the token's user PIN (it opens a session; the keys never leave the token). */
  @OptionalText()
  PKCS11_PIN?: string;

  /** KEY_PROVIDER=pkcs11: a file holding the PIN instead (its first line), e.g. a mounted secret. */
  @OptionalText()
  PKCS11_PIN_FILE?: string;

  /** KEY_PROVIDER=pkcs11: the key-encrypting keys are the token's AES keys labelled `<this>-v<N>`. */
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{1,48}$/, { message: 'PKCS11_KEY_LABEL must be 1 to 48 of A-Z a-z 0-9 . _ -' })
  PKCS11_KEY_LABEL = 'vault-kek';

  /** `v1:<base64 of 32 bytes>,v2:...`; the last one encrypts, all of them decrypt. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^v\d+:[A-Za-z0-9+/]{43}=(,v\d+:[A-Za-z0-9+/]{43}=)*$/, {
    message: 'ENCRYPTION_KEYS must be a comma-separated list of v<N>:<base64 of 32 bytes>',
  })
  ENCRYPTION_KEYS?: string;

  /**
   * The Ed25519 seed (base64 of 32 bytes) that signs audit checkpoints; unset, one is generated once and
   * stored sealed under the master key. Changing it adds a key; the old ones stay listed.
   */
  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[A-Za-z0-9+/]{43}=$/, { message: 'AUDIT_SIGNING_KEY must be the base64 of exactly 32 bytes' })
  AUDIT_SIGNING_KEY?: string;

  @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevel = 'info';

  @Transform(toBoolean)
  @IsBoolean({ message: 'BOOTSTRAP must be true or false' })
  BOOTSTRAP = true;

  /**
   * Scheduled jobs (expiry, retention, settlement, verification, audit sealing). On by default; tests
   * that count statements or rows turn them off so that no job runs in between.
   */
  @Transform(toBoolean)
  @IsBoolean({ message: 'JOBS_ENABLED must be true or false' })
  JOBS_ENABLED = true;

  /**
   * `GET /metrics` in the Prometheus text format. Off by default: the endpoint is unauthenticated, so it
   * belongs on a network that only the scraper reaches (or behind the proxy's own authentication).
   */
  @Transform(toBoolean)
  @IsBoolean({ message: 'METRICS_ENABLED must be true or false' })
  METRICS_ENABLED = false;

  /**
   * How far V8 lets the JavaScript heap grow past what survived the last full garbage collection, in
   * percent (V8's `--heap-growing-percent`); 0 leaves V8's own heuristic, which under a sustained load of
   * large requests lets garbage pile up to twice the service's idle size. A soft bound: more frequent
   * collections, never an out-of-memory error.
   */
  @Integer()
  @Min(0)
  @Max(1000)
  HEAP_GROWTH_PERCENT = 50;

  @Integer()
  @Min(1)
  LOG_RETENTION_DAYS = 365;

  /** How often, at most, each tenant's audit log gets a signed checkpoint (when it has new rows). */
  @Integer()
  @Min(1)
  @Max(3600)
  AUDIT_CHECKPOINT_SECONDS = 5;

  @Integer()
  @Min(1)
  RATE_LIMIT_PER_MINUTE = 6000;

  /**
   * Distinct card numbers sharing their first 6 and last 4 digits that the keys receiving fingerprints
   * may together tokenize per tenant in 24 hours; past it a tokenize is a 429 `card_enumeration_suspected`.
   */
  @Integer()
  @Min(1)
  CARD_ENUMERATION_LIMIT = 10;

  /**
   * Failed authentications (a `BT-API-KEY` that is malformed, unknown, revoked or expired) one client
   * address (see TRUST_PROXY) may make per minute on each instance; past it the address's further
   * failures are 429s until the minute ends. A valid key is always served. IPv6 addresses count per /64.
   */
  @Integer()
  @Min(1)
  AUTH_FAILURES_PER_MINUTE = 60;

  /**
   * The balancers in front of the service, whose `X-Forwarded-For` is believed: comma-separated addresses
   * or CIDR blocks (`127.0.0.1,10.0.0.0/8`). A request's client is then the rightmost address of the chain
   * (the connection's peer last) that is none of them; a request from any other peer is its own client,
   * whatever it forwards. Unset: every request's client is its peer, so behind a balancer every client
   * shares the balancer's address (for AUTH_FAILURES_PER_MINUTE and PUBLIC_TOKENIZE_PER_MINUTE).
   */
  @IsOptional()
  @Transform(emptyToUndefined)
  @ValidateBy({
    name: 'isTrustProxy',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && invalidTrustProxyEntries(value).length === 0,
      defaultMessage: () => TRUST_PROXY_FORMAT,
    },
  })
  TRUST_PROXY?: string;

  /**
   * Tokenize requests (`POST /tokenize`, `POST /tokens`) one client address may make per minute with the
   * keys of one public application (its public keys and the sessions it created), across instances; past
   * it a 429. Such a request creates at most 10 tokens. Private keys are not limited by it.
   */
  @Integer()
  @Min(1)
  PUBLIC_TOKENIZE_PER_MINUTE = 60;

  /**
   * Worker threads that evaluate custom expressions (fingerprint and search-index expressions other than
   * the default shapes), shared fairly between tenants. At least 2, so that one request spending its
   * whole time budget never holds them all; by default one fewer than the cores, from 2 to 4.
   */
  @Integer()
  @Min(2)
  @Max(64)
  EXPRESSION_WORKERS = Math.max(2, Math.min(4, availableParallelism() - 1));

  /** Connections in the pool when DATABASE_URL is set (the embedded database always uses one). */
  @Integer()
  @Min(1)
  @Max(100)
  DB_POOL_SIZE = 10;

  /**
   * A one-statement write (a tokenize of generated ids) as a named prepared statement, parsed
   * once per connection. Set false behind a pooler that cannot keep them (PgBouncer in transaction mode
   * before 1.21, or without `max_prepared_statements`).
   */
  @Transform(toBoolean)
  @IsBoolean({ message: 'DB_PREPARED_STATEMENTS must be true or false' })
  DB_PREPARED_STATEMENTS = true;

  /**
   * Browser origins allowed to call the API (comma-separated, e.g. `https://shop.example`); unset: no
   * CORS headers at all, so browsers only reach the API from the same origin.
   */
  @IsOptional()
  @Matches(/^(https?:\/\/[^\s,/]+)(,https?:\/\/[^\s,/]+)*$/, {
    message: 'CORS_ORIGINS must be a comma-separated list of origins such as https://shop.example',
  })
  CORS_ORIGINS?: string;

  /**
   * Destinations the outbound policy lets through although their address is not public:
   * comma-separated host names, IP addresses or CIDR ranges (`127.0.0.1,10.0.0.0/8,echo.local`).
   */
  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[A-Za-z0-9.:_/[\]-]+(,[A-Za-z0-9.:_/[\]-]+)*$/, {
    message:
      'OUTBOUND_ALLOWED_HOSTS must be a comma-separated list of host names, IP addresses or CIDR ranges',
  })
  OUTBOUND_ALLOWED_HOSTS?: string;

  /**
   * Where vendor adapters send their calls instead of the vendor's own endpoints:
   * comma-separated `<formula>=<base URL>` such as `stripe-card=http://127.0.0.1:12111`. A base URL
   * replaces what precedes the operation's path. Operator configuration: not subject to the outbound policy.
   */
  @IsOptional()
  @Transform(emptyToUndefined)
  @Matches(/^[a-z0-9-]+=https?:\/\/[^\s,=]+(,[a-z0-9-]+=https?:\/\/[^\s,=]+)*$/, {
    message:
      'VENDOR_BASE_URLS must be a comma-separated list of <formula>=<http(s) base URL> such as stripe-card=http://127.0.0.1:12111',
  })
  VENDOR_BASE_URLS?: string;

  /**
   * The Apple root certificate(s) an Apple Pay payload's signature must chain to (a PEM file; several
   * certificates may be concatenated). Unset: Apple Root CA - G3 as shipped with the service
   * (docs/wallets.md). Tests name a root of their own.
   */
  @OptionalText()
  APPLE_PAY_ROOT_CA?: string;

  /**
   * Google's root signing keys for Google Pay `ECv2` payloads: a JSON file in the format Google publishes
   * them (`{"keys": [{"keyValue", "protocolVersion", "keyExpiration"}]}`). Unset: Google Pay payloads are
   * refused with a problem naming this setting (docs/wallets.md).
   */
  @OptionalText()
  GOOGLE_PAY_ROOT_KEYS?: string;

  /** How long a proxy request waits for the destination's complete answer (504 after it). */
  @Integer()
  @Min(100)
  @Max(600_000)
  PROXY_TIMEOUT_MS = 30_000;

  /**
   * Whether this process delivers webhooks (with JOBS_ENABLED). Off, it still records events and serves
   * the API; another instance delivers them (a dedicated delivery instance, or tests that share a database).
   */
  @Transform(toBoolean)
  @IsBoolean({ message: 'WEBHOOK_DELIVERY_ENABLED must be true or false' })
  WEBHOOK_DELIVERY_ENABLED = true;

  /**
   * Delays in seconds between a webhook delivery's attempts: after the last one,
   * the delivery is `failed`.
   */
  @Matches(/^\d{1,6}(,\d{1,6})*$/, {
    message: 'WEBHOOK_RETRY_SECONDS must be a comma-separated list of whole seconds such as 5,30,120',
  })
  WEBHOOK_RETRY_SECONDS = '5,30,120,600,3600,21600';

  /** How often each instance's delivery worker looks for due webhook deliveries (it is also woken by new ones). */
  @Integer()
  @Min(10)
  @Max(60_000)
  WEBHOOK_POLL_MS = 1000;

  /**
   * How long a worker holds a delivery it claimed; a delivery whose worker died is sent again once its
   * lease has run out. Longer than the 10 s a receiver has to answer, so that no other instance sends
   * a delivery while it is still being sent.
   */
  @Integer()
  @Min(11)
  @Max(3600)
  WEBHOOK_LEASE_SECONDS = 30;

  /**
   * How long an operation at a vendor that confirms by notification (Adyen's captures, cancels, refunds
   * and unanswered authorizations) may wait for it: then the settlement job marks it failed and logs it.
   */
  @Integer()
  @Min(60)
  @Max(30 * 86_400)
  VENDOR_NOTIFICATION_TIMEOUT_SECONDS = 86_400;

  /**
   * How long a stopping server (SIGINT, SIGTERM) gives the requests in flight and the jobs' current steps
   * to finish once it is no longer ready and no longer accepts connections; what still runs then is cut
   * and the process exits non-zero. Below the 30 s most orchestrators wait before a SIGKILL.
   */
  @Integer()
  @Min(0)
  @Max(600_000)
  SHUTDOWN_GRACE_MS = 25_000;

  /**
   * How long a stopping server goes on accepting and serving, not ready, before it closes its listening
   * socket: long enough for a balancer's health check to take it out of rotation (the shipped HAProxy
   * checks every second, `fall 2`), so that no connection is refused or reset in its accept queue and no
   * request needs re-sending. Counted within SHUTDOWN_GRACE_MS; `npm start` sets 0 when unset.
   */
  @Integer()
  @Min(0)
  @Max(60_000)
  SHUTDOWN_DRAIN_DELAY_MS = 3_000;

  /** Not from the environment: what this process is (the CLI sets `cli`), recorded in the embedded lock. */
  role: 'server' | 'cli' = 'server';

  get publicBaseUrl(): string {
    return (this.PUBLIC_BASE_URL ?? `http://localhost:${this.PORT}`).replace(/\/+$/, '');
  }

  /** WEBHOOK_RETRY_SECONDS as milliseconds. */
  get webhookRetryDelaysMs(): number[] {
    return this.WEBHOOK_RETRY_SECONDS.split(',').map((seconds) => Number(seconds) * 1000);
  }

  /** VENDOR_BASE_URLS by formula id, each without a trailing slash. */
  get vendorBaseUrls(): Map<string, string> {
    const urls = new Map<string, string>();
    for (const entry of this.VENDOR_BASE_URLS?.split(',') ?? []) {
      const at = entry.indexOf('=');
      urls.set(entry.slice(0, at), entry.slice(at + 1).replace(/\/+$/, ''));
    }
    return urls;
  }

  get embedded(): boolean {
    return this.DATABASE_URL === undefined;
  }

  /** The database this process uses, for the operator (never the credentials). */
  get databaseDescription(): string {
    return this.DATABASE_URL === undefined
      ? `the embedded database in ${resolve(this.DATA_DIR)}`
      : `PostgreSQL at ${databaseTarget(this.DATABASE_URL)}`;
  }

  /** The version new wrappings use under ENCRYPTION_KEYS (the last one); undefined without it. */
  get activeKeyVersion(): string | undefined {
    return this.ENCRYPTION_KEYS?.split(',').at(-1)?.split(':')[0];
  }
}
