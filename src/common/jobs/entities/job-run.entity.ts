import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One run of a scheduled job for one tick: the primary key lets exactly one instance run each tick. */
@Entity({ name: 'job_runs' })
export class JobRunEntity {
  @PrimaryColumn({ type: 'varchar', length: 60 })
  job: string;

  @PrimaryColumn({ name: 'tick_start', type: 'timestamptz' })
  tickStart: Date;

  @Column({ name: 'instance_id', type: 'uuid' })
  instanceId: string;

  @Column({ name: 'ran_at', type: 'timestamptz' })
  ranAt: Date;
}
