import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A tenant's audit tree: its size, its first leaf still backed by a row, and its last checkpoint. */
@Entity({ name: 'audit_trees' })
export class AuditTreeEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** Leaves appended (a bigint, as text). */
  @Column({ type: 'bigint', default: 0 })
  size: string;

  /** Leaves below this index lost their rows to retention; their hashes stay in the tiles. */
  @Column({ name: 'retained_from', type: 'bigint', default: 0 })
  retainedFrom: string;

  @Column({ name: 'checkpoint_size', type: 'bigint', default: 0 })
  checkpointSize: string;

  @Column({ name: 'checkpoint_at', type: 'timestamptz', nullable: true })
  checkpointAt: Date | null;
}

/** Up to 256 hashes of one level of a tenant's tree (see tree/tiles.ts). */
@Entity({ name: 'audit_tree_tiles' })
export class AuditTreeTileEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ type: 'integer' })
  level: number;

  /** A bigint, as text. */
  @PrimaryColumn({ type: 'bigint' })
  idx: string;

  @Column({ type: 'bytea' })
  hashes: Buffer;
}

/** Where an audit row is in its tenant's tree. */
@Entity({ name: 'audit_leaves' })
export class AuditLeafEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'row_id', type: 'uuid' })
  rowId: string;

  /** A bigint, as text. */
  @Column({ name: 'leaf_index', type: 'bigint' })
  leafIndex: string;
}

/** The last audit row appended to a tree, in the leaf order `(written, pos)`: one row. */
@Entity({ name: 'audit_tree_cursor' })
export class AuditTreeCursorEntity {
  @PrimaryColumn({ type: 'boolean', default: true })
  one: boolean;

  @Column({ type: 'bigint' })
  written: string;

  @Column({ type: 'bigint' })
  pos: string;
}

/** A signed checkpoint of a tenant's tree. */
@Entity({ name: 'audit_checkpoints' })
export class AuditCheckpointEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'tree_size', type: 'bigint' })
  treeSize: string;

  @Column({ name: 'root_hash', type: 'bytea' })
  rootHash: Buffer;

  @Column({ name: 'key_id', type: 'varchar', length: 8 })
  keyId: string;

  /** The signed note, byte for byte. */
  @Column({ type: 'text' })
  note: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

/** A checkpoint signing key: its public half, and the private seed sealed under a master key when generated here. */
@Entity({ name: 'audit_signing_keys' })
export class AuditSigningKeyEntity {
  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 300 })
  name: string;

  @Column({ name: 'key_id', type: 'varchar', length: 8 })
  keyId: string;

  @Column({ name: 'public_key', type: 'bytea' })
  publicKey: Buffer;

  /** Null for a key given as AUDIT_SIGNING_KEY (its seed stays in the environment). */
  @Column({ name: 'sealed_seed', type: 'bytea', nullable: true })
  sealedSeed: Buffer | null;

  @Column({ name: 'master_key_version', type: 'varchar', length: 20, nullable: true })
  masterKeyVersion: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
