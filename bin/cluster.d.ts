/** The API of bin/cluster.js (`npm run cluster`), for the tests and the soak. */

export interface ClusterOptions {
  /** Instances of the service behind HAProxy (2). */
  instances?: number;
  /** HAProxy's port (a free one by default). */
  port?: number;
  /** The PostgreSQL server the cluster makes its database on (DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres). */
  serverUrl?: string;
  /** The database's name is this, then a time and a random part (`vault_cluster`). */
  databasePrefix?: string;
  /** More settings for every instance (ENCRYPTION_KEYS given here is used instead of a generated one). */
  env?: Record<string, string>;
  /** The instances' LOG_LEVEL (`info`). */
  logLevel?: string;
  keepDatabase?: boolean;
  /** Keep the run directory (configurations and every process's output) after `stop`. */
  keepLogs?: boolean;
  /** Build dist/ first when it is older than the sources (true). */
  build?: boolean;
  log?: (line: string) => void;
}

export interface ServerStats {
  name: string;
  /** HAProxy's view: UP, DOWN, or a transition such as `UP 1/2`. */
  status: string;
  requests: number;
  retries: number;
  redispatches: number;
  connectionErrors: number;
  responseErrors: number;
  http5xx: number;
  /** Requests (sessions) it is handling now (`scur`). */
  current: number;
}

export interface Stopped {
  /** The instance's exit code (0: its shutdown finished within SHUTDOWN_GRACE_MS). */
  code: number | string | null | undefined;
  stopMs: number;
  /** The lines its shutdown printed, one per phase (`shutdown: draining 2 requests, ...`). */
  shutdown: string[];
}

export interface Started {
  /** From the start to its first 200 on `/health/ready`. */
  readyMs: number;
  /** From the start until HAProxy sends to it (the same as readyMs when not waited for). */
  balancedMs: number;
}

export interface ClusterInstance {
  name: string;
  port: number;
  url: string;
  readonly pid: number | undefined;
  /** The end of its output (stdout and stderr), since its last start. */
  output(): string;
  start(options?: { balanced?: boolean }): Promise<Started>;
  stop(): Promise<Stopped>;
  /** SIGTERM, its exit, a new start, until HAProxy sends to it again. */
  restart(): Promise<Stopped & Started>;
  /** SIGKILL (a crash: nothing drains), and its exit. */
  kill(): Promise<void>;
}

export interface Cluster {
  /** HAProxy: where clients go. */
  url: string;
  database: string;
  /** Through PgBouncer (the instances' DATABASE_URL). */
  databaseUrl: string;
  /** Straight to PostgreSQL (the instances' DATABASE_LISTEN_URL). */
  directUrl: string;
  encryptionKeys: string;
  /** The key of the tenant the first start made. */
  managementKey: string | undefined;
  /** The run directory: configurations, logs. */
  dir: string;
  pgbouncer: {
    port: number;
    readonly pid: number | undefined;
    /** SIGTERM (its immediate shutdown: every connection through it is cut), its exit, a start on the same port. */
    restart(): Promise<{ stopMs: number; readyMs: number }>;
  };
  haproxy: {
    port: number;
    pid: number | undefined;
    /** One command to HAProxy's runtime API (`disable server instances/i2`); answers its text. */
    command(command: string): Promise<string>;
  };
  instances: ClusterInstance[];
  /** HAProxy's counters per instance. */
  stats(): Promise<ServerStats[]>;
  /** Stops the instances (each drains), HAProxy and PgBouncer, and drops the database. */
  stop(): Promise<Stopped[]>;
}

export function startCluster(options?: ClusterOptions): Promise<Cluster>;

/** The paths of pgbouncer and haproxy; throws, saying how to install them, when one is missing. */
export function requireTools(): { pgbouncer: string; haproxy: string };
