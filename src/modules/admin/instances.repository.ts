import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';

const EXAMPLE_INSTANCE: LiveInstance = {
  id: '00000000-0000-4000-8000-000000000001',
  hostname: 'vault-1',
  pid: 4242,
  keyVersions: ['v1', 'v2'],
};

/** A running server as its heartbeat row describes it. */
export interface LiveInstance {
  id: string;
  hostname: string;
  pid: number;
  keyVersions: string[];
}

/** The `instances` table: one heartbeat row per running server, outside any request's transaction. */
@Injectable()
export class InstancesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Records (or refreshes) this instance; recreates its row when it was removed meanwhile. */
  @GenerateSql({ params: [EXAMPLE_INSTANCE] })
  async beat(instance: LiveInstance): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO instances (id, hostname, pid, key_versions) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET seen_at = now(), key_versions = EXCLUDED.key_versions`,
      [instance.id, instance.hostname, instance.pid, instance.keyVersions],
    );
  }

  @GenerateSql({ params: [EXAMPLE_INSTANCE.id] })
  async remove(id: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM instances WHERE id = $1`, [id]);
  }

  /** The instances seen within `withinSeconds`, by the database's clock (instances on other hosts agree on it). */
  @GenerateSql({ params: [30] })
  async live(withinSeconds: number): Promise<LiveInstance[]> {
    const rows = await this.dataSource.query<
      { id: string; hostname: string; pid: number; key_versions: string[] }[]
    >(
      `SELECT id, hostname, pid, key_versions FROM instances
        WHERE seen_at > now() - make_interval(secs => $1) ORDER BY started_at`,
      [withinSeconds],
    );
    return rows.map((r) => ({ id: r.id, hostname: r.hostname, pid: r.pid, keyVersions: r.key_versions }));
  }

  /** Rows of instances that stopped without removing theirs, long gone. */
  @GenerateSql({ params: [86_400] })
  async prune(olderThanSeconds: number): Promise<void> {
    await this.dataSource.query(`DELETE FROM instances WHERE seen_at < now() - make_interval(secs => $1)`, [
      olderThanSeconds,
    ]);
  }
}
