/** The API of bin/cluster.js (`npm run cluster`), for the tests and the soak. */

export interface ClusterOptions {
  /**
   * The database under Patroni (`--ha`): etcd and two PostgreSQL nodes in the run directory, reached
   * through a HAProxy that follows the leader; `serverUrl` and `keepDatabase` then mean nothing.
   */
  ha?: boolean;
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

/** One PostgreSQL node and its Patroni (bin/cluster-ha.js). */
export interface HaNode {
  name: string;
  pgPort: number;
  restPort: number;
  /** Straight to this node's PostgreSQL. */
  url: string;
  /** Its Patroni's REST API. */
  restUrl: string;
  readonly patroniPid: number | undefined;
  postgresPid(): number | undefined;
  /** Starts its Patroni (again). */
  start(): void;
  /** `kill -9` of the postmaster; answers its pid. */
  killPostgres(): number;
  /** `kill -9` of Patroni (its PostgreSQL runs on); answers its pid. */
  killPatroni(): Promise<number>;
  /** Patroni's `/patroni` of this node. */
  status(): Promise<{ role: string; state: string; timeline?: number } | undefined>;
}

/** The database of `--ha`. */
export interface HaDatabase {
  /** The leader, through the database's HAProxy. */
  serverUrl: string;
  etcd: { url: string; pid: number | undefined };
  haproxy: { port: number; pid: number | undefined };
  nodes: HaNode[];
  /** The node whose Patroni answers 200 on `/primary`. */
  leader(): Promise<HaNode | undefined>;
  /** Patroni's `/cluster` members. */
  members(): Promise<{ name: string; role: string; state: string; timeline?: number }[] | undefined>;
  /** Until a leader answers through HAProxy and the other node is its streaming synchronous standby. */
  healthy(timeoutMs?: number): Promise<void>;
}

export interface Cluster {
  /** HAProxy: where clients go. */
  url: string;
  database: string;
  /** Through PgBouncer (the instances' DATABASE_URL). */
  databaseUrl: string;
  /** Straight to PostgreSQL (the instances' DATABASE_LISTEN_URL); with `ha`, through the database's HAProxy. */
  directUrl: string;
  /** With `ha`: etcd, the nodes and their HAProxy. */
  ha: HaDatabase | undefined;
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
