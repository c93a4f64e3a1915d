import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A run of `vault keys rotate --tenant-keys`: unfinished until every token is under its tenant's last generation. */
@Entity({ name: 'data_key_rotations' })
export class DataKeyRotationEntity {
  @PrimaryColumn('uuid')
  id: string;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt: Date;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;
}
