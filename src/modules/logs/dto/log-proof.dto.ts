import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { LogDto } from './log.dto';

const MAX_SIZE = Number.MAX_SAFE_INTEGER;

/** The latest signed checkpoint of the caller's audit log. */
export class CheckpointDto {
  /** `<host>/audit/<tenant_id>`: the log this checkpoint is of. */
  origin: string;
  /** How many log rows (leaves) the tree it signs has. */
  tree_size: number;
  /** The tree's root hash (RFC 9162), standard padded base64. */
  root_hash: string;
  created_at: string;
  /** The whole signed note (C2SP tlog-checkpoint signed with Ed25519 as a C2SP signed-note), byte for byte. */
  note: string;
}

/** A key that signs checkpoints (old ones stay listed: old checkpoints still verify). */
export class SigningKeyDto {
  /** `<host>/audit`. */
  name: string;
  /** The signed-note key hash, 8 hex digits. */
  key_id: string;
  /** The Ed25519 public key, base64 of its 32 bytes. */
  public_key: string;
  /** In the signed-note verifier format: `<name>+<key_id>+<base64 of 0x01 and the public key>`. */
  verifier_key: string;
  created_at: string;
}

export class ProofQueryDto {
  /** A checkpointed tree size that includes the row; the latest checkpoint's by default. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_SIZE)
  tree_size?: number;
}

/** That a log row is in the tree a checkpoint signed (RFC 9162 inclusion proof). */
export class LogProofDto {
  /** The row, as `GET /logs` shows it: its canonical JSON (RFC 8785) is the leaf. */
  log: LogDto;
  leaf_index: number;
  tree_size: number;
  /** The audit path, leaf to root, each hash base64. */
  inclusion_path: string[];
}

export class ConsistencyQueryDto {
  /** The smaller checkpointed tree size (at least 1). */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_SIZE)
  first: number;

  /** The larger checkpointed tree size. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_SIZE)
  second: number;
}

/** That the tree of `first` leaves is a prefix of the tree of `second` (RFC 9162 consistency proof). */
export class ConsistencyProofDto {
  first: number;
  second: number;
  /** Each hash base64. */
  consistency_path: string[];
}
