import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The hits of one rate limit key in one fixed window, shared by every instance. */
@Entity({ name: 'rate_limits' })
export class RateLimitEntity {
  @PrimaryColumn({ type: 'text' })
  key: string;

  @PrimaryColumn({ name: 'window_start', type: 'timestamptz' })
  windowStart: Date;

  @Column({ type: 'integer' })
  hits: number;
}
