import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A running instance of the service, as it last reported itself (the admin status lists them). */
@Entity({ name: 'instances' })
export class InstanceEntity {
  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  hostname: string;

  @Column({ type: 'integer' })
  pid: number;

  /** The master key versions the instance holds. */
  @Column({ name: 'key_versions', type: 'text', array: true })
  keyVersions: string[];

  @Column({ name: 'started_at', type: 'timestamptz', default: () => 'now()' })
  startedAt: Date;

  @Column({ name: 'seen_at', type: 'timestamptz', default: () => 'now()' })
  seenAt: Date;
}
