import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, insertOf, type RowOf, queryRows } from '../../database/table';
import { InstanceEntity } from './entities/instance.entity';

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

/** What `live` reads of an instance. */
const LIVE = ['id', 'hostname', 'pid', 'key_versions'] as const;

/** The `instances` table: one heartbeat row per running server, outside any request's transaction. */
@Injectable()
export class InstancesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Records (or refreshes) this instance; recreates its row when it was removed meanwhile. */
  @GenerateSql({ params: [EXAMPLE_INSTANCE] })
  async beat(instance: LiveInstance): Promise<void> {
    const { sql, params } = insertOf(InstanceEntity, {
      id: instance.id,
      hostname: instance.hostname,
      pid: instance.pid,
      key_versions: instance.keyVersions,
    });
    await this.dataSource.query(
      `${sql}
       ON CONFLICT (id) DO UPDATE SET seen_at = now(), key_versions = EXCLUDED.key_versions`,
      params,
    );
  }

  @GenerateSql({ params: [EXAMPLE_INSTANCE.id] })
  async remove(id: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM instances WHERE id = $1`, [id]);
  }

  /** The instances seen within `withinSeconds`, by the database's clock (instances on other hosts agree on it). */
  @GenerateSql({ params: [30] })
  async live(withinSeconds: number): Promise<LiveInstance[]> {
    const rows = await queryRows<Pick<RowOf<InstanceEntity>, (typeof LIVE)[number]>>(
      this.dataSource,
      `SELECT ${columnsOf(InstanceEntity, undefined, { only: LIVE })} FROM instances
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
