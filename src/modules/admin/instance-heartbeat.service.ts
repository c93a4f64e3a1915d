import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { MasterKeyRing } from '../../common/crypto/master-keys';
import { InstancesRepository, LiveInstance } from './instances.repository';

/** How often a server refreshes its row; it counts as running while seen within LIVE_SECONDS. */
export const HEARTBEAT_SECONDS = 10;
export const LIVE_SECONDS = 3 * HEARTBEAT_SECONDS;

/**
 * Publishes this server and the master key versions it holds (never the keys) in `instances`, every
 * HEARTBEAT_SECONDS, and removes the row when the server stops cleanly. `keys rotate` reads it.
 */
@Injectable()
export class InstanceHeartbeatService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Instances');
  private timer: NodeJS.Timeout | undefined;
  private readonly id = randomUUID();

  constructor(
    private readonly instances: InstancesRepository,
    private readonly ring: MasterKeyRing,
  ) {}

  /** This server as its row shows it: a sealed one (KEY_PROVIDER=split) holds no key version yet. */
  get self(): LiveInstance {
    return {
      id: this.id,
      hostname: hostname(),
      pid: process.pid,
      keyVersions: this.ring.sealed ? [] : this.ring.keys.map((k) => k.version),
    };
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.instances.beat(this.self);
    await this.instances.prune(86_400);
    // Unsealed, or a newer key adopted: `keys rotate` sees the versions held now, not at the next beat.
    this.ring.onChange(() => void this.instances.beat(this.self).catch(() => undefined));
    this.timer = setInterval(() => {
      this.instances.beat(this.self).catch((error: unknown) => {
        this.logger.warn(`heartbeat failed: ${error instanceof Error ? error.message : String(error)}`);
      });
    }, HEARTBEAT_SECONDS * 1000);
    this.timer.unref();
  }

  /** Before the database closes. */
  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.instances.remove(this.self.id).catch(() => undefined);
  }
}
