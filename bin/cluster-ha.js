'use strict';
/*
 * The database of `npm run cluster -- --ha` (docs/operations.md, "High availability"): a one-node etcd,
 * two PostgreSQL nodes each run by Patroni (synchronous replication: a commit is acknowledged once the
 * standby has it), and a TCP HAProxy in front of them that sends connections to whichever node Patroni's
 * REST API calls the primary, and cuts the connections to a node as soon as it is not. PgBouncer and the
 * service's instances connect through that HAProxy, so they follow the leader without being told.
 * Every port is a free one and every file is in the cluster's run directory.
 */
const { spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const {
  findExecutable,
  freePort,
  giveToDaemonUser,
  launch,
  query,
  sleep,
  waitFor,
} = require('./cluster-parts');

const INSTALL = {
  patroni: 'apt-get install patroni (Debian, Ubuntu), pip install patroni[etcd3]',
  etcd: 'apt-get install etcd-server (Debian, Ubuntu), brew install etcd (macOS)',
  postgres: 'apt-get install postgresql-15 (Debian, Ubuntu)',
};

/**
 * Patroni's settings, the same on both nodes (docs/operations.md explains each). The `dcs` part is written
 * to etcd when the cluster is first bootstrapped and is the cluster's from then on.
 */
const DCS = {
  // The leader key lives 10 s unless renewed: a leader whose Patroni is gone is replaced after that.
  ttl: 10,
  // Each Patroni looks at its PostgreSQL and etcd every 2 s.
  loop_wait: 2,
  // How long an etcd or PostgreSQL call is retried before the leader demotes itself.
  retry_timeout: 4,
  // A crashed leader's PostgreSQL is not restarted in place: the synchronous standby takes over at once.
  primary_start_timeout: 0,
  // Only a standby with every byte of the leader's WAL may be promoted.
  maximum_lag_on_failover: 0,
  // A commit returns once the synchronous standby has flushed it; only that standby is ever promoted.
  synchronous_mode: true,
  postgresql: {
    // The old leader rejoins as a standby: its WAL after the fork point is rewound, not a new base backup.
    use_pg_rewind: true,
    use_slots: true,
    parameters: {
      max_connections: 200,
      wal_log_hints: 'on',
      wal_keep_size: '256MB',
    },
  },
};

/** Where PostgreSQL 15's programs are: POSTGRES_BIN_DIR, Debian's directory, or `pg_config --bindir`. */
function postgresBinDir() {
  const candidates = [
    process.env.POSTGRES_BIN_DIR,
    '/usr/lib/postgresql/15/bin',
    ...(existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .sort()
          .reverse()
          .map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
    spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' }).stdout?.trim(),
  ];
  return candidates.find(
    (dir) => dir && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb')),
  );
}

/** Patroni, etcd and PostgreSQL's programs, or an error saying which is missing and how to install it. */
function requireHaTools() {
  const found = {
    patroni: findExecutable('patroni'),
    etcd: findExecutable('etcd'),
    postgres: postgresBinDir(),
  };
  const missing = Object.keys(found).filter((name) => !found[name]);
  if (missing.length)
    throw new Error(
      missing
        .map((name) => `${name} is not installed (needed by npm run cluster -- --ha): ${INSTALL[name]}`)
        .join('\n'),
    );
  return found;
}

/** A YAML document of `value` (JSON is YAML; Patroni reads either). */
const yaml = (value) => `${JSON.stringify(value, null, 2)}\n`;

function patroniConfig({ name, dir, restPort, pgPort, etcdPort, binDir }) {
  return {
    scope: 'vault',
    name,
    log: { level: 'INFO' },
    restapi: { listen: `127.0.0.1:${restPort}`, connect_address: `127.0.0.1:${restPort}` },
    etcd3: { hosts: `127.0.0.1:${etcdPort}` },
    bootstrap: {
      dcs: DCS,
      initdb: [{ encoding: 'UTF8' }, { 'auth-local': 'trust' }, { 'auth-host': 'trust' }],
      // The same machine only: every connection comes from 127.0.0.1 (real machines: docs/operations.md).
      pg_hba: [
        'local all all trust',
        'host all all 127.0.0.1/32 trust',
        'host replication all 127.0.0.1/32 trust',
      ],
    },
    postgresql: {
      listen: `127.0.0.1:${pgPort}`,
      connect_address: `127.0.0.1:${pgPort}`,
      data_dir: join(dir, name),
      bin_dir: binDir,
      pgpass: join(dir, `${name}.pgpass`),
      authentication: {
        superuser: { username: 'postgres' },
        replication: { username: 'postgres' },
        rewind: { username: 'postgres' },
      },
      parameters: { unix_socket_directories: dir },
    },
  };
}

/** TCP HAProxy for the database: the node whose Patroni answers 200 on `/primary`, and no other. */
function haproxyDbConfig({ dir, port, nodes }) {
  return [
    'global',
    '  maxconn 2000',
    `  stats socket ${join(dir, 'haproxy-db.sock')} mode 600 level admin`,
    '',
    'defaults',
    '  mode tcp',
    '  timeout connect 2s',
    // Pooled and LISTEN connections sit idle for long: only a dead peer ends them.
    '  timeout client 1h',
    '  timeout server 1h',
    '  timeout check 1s',
    '',
    'listen postgres',
    `  bind 127.0.0.1:${port}`,
    '  option httpchk',
    '  http-check send meth GET uri /primary',
    '  http-check expect status 200',
    // A node that stops being the primary is out within half a second, and every connection to it is
    // cut: no statement may reach a demoted or orphaned PostgreSQL.
    '  default-server inter 1s fastinter 250ms downinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions',
    ...nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.pgPort} check port ${node.restPort}`),
    '',
  ].join('\n');
}

/** Patroni's REST API of one node: the answer's status and JSON body (undefined when it does not answer). */
async function rest(node, path) {
  try {
    const res = await fetch(`http://127.0.0.1:${node.restPort}${path}`, {
      signal: AbortSignal.timeout(2_000),
    });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  } catch {
    return undefined;
  }
}

/**
 * The exit of a launched Patroni: its `exit`, not its `close` (`exited`), which waits for every holder of
 * its output pipes, and a PostgreSQL that outlives a killed Patroni holds them.
 */
async function exitOf(proc) {
  while (proc.running()) await sleep(50);
}

/** One Patroni node: its Patroni process (killed, started again) and its PostgreSQL (killed). */
function nodeOf({ name, dir, restPort, pgPort, tools, user, etcdPort }) {
  const config = join(dir, `${name}.yml`);
  writeFileSync(
    config,
    yaml(patroniConfig({ name, dir, restPort, pgPort, etcdPort, binDir: tools.postgres })),
  );
  if (user) giveToDaemonUser([config]);
  let proc;
  const dataDir = join(dir, name);
  const node = {
    name,
    pgPort,
    restPort,
    url: `postgres://postgres@127.0.0.1:${pgPort}/postgres`,
    restUrl: `http://127.0.0.1:${restPort}`,
    get patroniPid() {
      return proc?.running() ? proc.child.pid : undefined;
    },
    /** The postmaster's pid (its `postmaster.pid`), when PostgreSQL runs. */
    postgresPid() {
      try {
        const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
        process.kill(pid, 0);
        return pid;
      } catch {
        return undefined;
      }
    },
    start() {
      if (proc?.running()) throw new Error(`${name}'s Patroni is running`);
      proc = launch(`patroni ${name}`, tools.patroni, [config], {
        env: { HOME: dir, PYTHONUNBUFFERED: '1' },
        logFile: join(dir, `${name}.log`),
        cwd: dir,
        ...(user ? { uid: user.uid, gid: user.gid } : {}),
      });
    },
    /** `kill -9` of the postmaster (Patroni goes on). */
    killPostgres() {
      const pid = node.postgresPid();
      if (!pid) throw new Error(`${name}'s PostgreSQL is not running`);
      process.kill(pid, 'SIGKILL');
      return pid;
    },
    /** `kill -9` of Patroni (its PostgreSQL goes on, no longer managed). */
    async killPatroni() {
      const pid = node.patroniPid;
      if (!pid) throw new Error(`${name}'s Patroni is not running`);
      proc.child.kill('SIGKILL');
      await exitOf(proc);
      return pid;
    },
    /** Patroni's view of this node (`/patroni`): role, state, timeline; undefined when it does not answer. */
    async status() {
      return (await rest(node, '/patroni'))?.body;
    },
    /** SIGTERM to Patroni (it stops its PostgreSQL), then PostgreSQL itself if it outlived Patroni. */
    async stop() {
      if (proc?.running()) proc.child.kill('SIGTERM');
      if (proc) await Promise.race([exitOf(proc), sleep(30_000)]);
      if (proc?.running()) proc.child.kill('SIGKILL');
      const pid = node.postgresPid();
      if (pid) process.kill(pid, 'SIGQUIT');
    },
    output: () => proc?.output() ?? '',
    processes: () => (proc ? [proc] : []),
  };
  return node;
}

/**
 * Starts etcd, the Patroni nodes and the database HAProxy in `dir`, and answers once a leader answers
 * through HAProxy and its synchronous standby streams. `serverUrl` reaches the leader (through HAProxy).
 */
async function startDatabaseNodes({ dir, haproxy, log = () => undefined, count = 2 }) {
  const tools = requireHaTools();
  const user = giveToDaemonUser([dir]);
  const daemons = [];
  const etcdPort = await freePort();
  const etcdPeerPort = await freePort();
  mkdirSync(join(dir, 'etcd'), { mode: 0o700 });
  const etcd = launch(
    'etcd',
    tools.etcd,
    [
      '--name=etcd1',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=etcd1=http://127.0.0.1:${etcdPeerPort}`,
      '--log-level=warn',
    ],
    { logFile: join(dir, 'etcd.log') },
  );
  daemons.push(etcd);
  const nodes = [];
  const all = () => [...daemons, ...nodes.flatMap((n) => n.processes())];
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    for (const daemon of [...daemons].reverse()) {
      if (daemon.running()) daemon.child.kill('SIGTERM');
      await daemon.exited;
    }
  };
  try {
    await waitFor(
      async () => {
        if (!etcd.running()) throw new Error(`etcd exited:\n${etcd.output()}`);
        return fetch(`http://127.0.0.1:${etcdPort}/health`).then(
          (res) => res.ok,
          () => false,
        );
      },
      20_000,
      'etcd to answer',
    );
    for (let n = 1; n <= count; n++)
      nodes.push(
        nodeOf({
          name: `pg${n}`,
          dir,
          restPort: await freePort(),
          pgPort: await freePort(),
          tools,
          user,
          etcdPort,
        }),
      );
    // The first bootstraps the cluster (initdb); the others then copy it (pg_basebackup) and follow.
    nodes[0].start();
    await waitFor(
      async () => (await rest(nodes[0], '/primary'))?.status === 200,
      60_000,
      'the first node to lead',
    );
    for (const node of nodes.slice(1)) node.start();

    const port = await freePort();
    writeFileSync(join(dir, 'haproxy-db.cfg'), haproxyDbConfig({ dir, port, nodes }));
    const checked = spawnSync(haproxy, ['-c', '-q', '-f', join(dir, 'haproxy-db.cfg')], { encoding: 'utf8' });
    if (checked.status !== 0)
      throw new Error(`haproxy refuses the database configuration:\n${checked.stderr}${checked.stdout}`);
    const balancer = launch('haproxy-db', haproxy, ['-db', '-f', join(dir, 'haproxy-db.cfg')], {
      logFile: join(dir, 'haproxy-db.log'),
    });
    daemons.push(balancer);
    const serverUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const cluster = {
      serverUrl,
      etcd: { url: `http://127.0.0.1:${etcdPort}`, pid: etcd.child.pid },
      haproxy: { port, pid: balancer.child.pid },
      nodes,
      /** The node Patroni calls the primary now (by its REST API), if any. */
      async leader() {
        for (const node of nodes) if ((await rest(node, '/primary'))?.status === 200) return node;
        return undefined;
      },
      /** Patroni's view of the cluster (`/cluster` of the first node that answers). */
      async members() {
        for (const node of nodes) {
          const answer = await rest(node, '/cluster');
          if (answer?.body) return answer.body.members;
        }
        return undefined;
      },
      /**
       * Waits until there is a leader reachable through HAProxy and every other node is its streaming
       * synchronous standby (or a streaming replica), as after a clean start or a rejoin.
       */
      async healthy(timeoutMs = 120_000) {
        await waitFor(
          async () => {
            const members = (await cluster.members()) ?? [];
            const leader = members.find((m) => m.role === 'leader' && m.state === 'running');
            const standbys = members.filter((m) => m.role !== 'leader');
            if (!leader || standbys.length !== nodes.length - 1) return false;
            if (!standbys.every((m) => m.state === 'streaming' || m.state === 'running')) return false;
            if (!standbys.some((m) => m.role === 'sync_standby')) return false;
            return query(serverUrl, 'SELECT 1').then(
              () => true,
              () => false,
            );
          },
          timeoutMs,
          'a leader and its synchronous standby',
        );
      },
      processes: all,
      /** SIGKILL to every node's PostgreSQL (when this process exits without a stop). */
      killPostgres() {
        for (const node of nodes) {
          const pid = node.postgresPid();
          if (pid) process.kill(pid, 'SIGKILL');
        }
      },
      stop,
    };
    await cluster.healthy();
    log(`database: ${nodes.map((n) => `${n.name} ${n.url} (Patroni ${n.restUrl})`).join(', ')}`);
    return cluster;
  } catch (error) {
    const outputs = nodes.map((n) => `--- ${n.name}:\n${n.output().slice(-4_000)}`).join('\n');
    await stop().catch(() => undefined);
    throw new Error(`${error.message}\n${outputs}`);
  }
}

module.exports = { startDatabaseNodes, requireHaTools };
