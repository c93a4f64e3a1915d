import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { CheckpointDto, ConsistencyProofDto, LogProofDto, SigningKeyDto } from './log-proof.dto';
import { EntityTypeDto, LogPageDto } from './log.dto';

/**
 * The OpenAPI description of the audit log routes, one decorator per route, so that the controller
 * reads as routing only.
 */

/** The request and answer of each route, by the controller's method name. */
export const LogsApi = {
  list: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listLogs',
        summary: 'List audit logs, newest first',
        description:
          'Cursor pagination: pass `pagination.after` of a page as `start` to get the next one. `page` pages by ' +
          'number instead.',
      }),
      ApiOkResponse({ type: LogPageDto }),
    ),
  entityTypes: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listLogEntityTypes',
        summary: 'List the entity types logs are written for',
      }),
      ApiOkResponse({ type: [EntityTypeDto] }),
    ),
  checkpoint: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'getLogCheckpoint',
        summary: "The latest signed checkpoint of the tenant's audit log",
        description:
          'The audit log is a Merkle tree (RFC 9162) whose leaves are the logs as `GET /logs` shows them ' +
          '(RFC 8785 canonical JSON). Keep the `note`: a later consistency proof shows the log still holds ' +
          'what it signed. 404 `no_checkpoint` before the first.',
      }),
      ApiOkResponse({ type: CheckpointDto }),
    ),
  keys: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listLogCheckpointKeys',
        summary: 'The keys that sign checkpoints, old ones too',
      }),
      ApiOkResponse({ type: [SigningKeyDto] }),
    ),
  consistency: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'getLogConsistencyProof',
        summary: 'That an earlier checkpointed tree is a prefix of a later one (RFC 9162 consistency proof)',
      }),
      ApiOkResponse({ type: ConsistencyProofDto }),
    ),
  proof: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'getLogProof',
        summary: 'That a log is in a checkpointed tree (RFC 9162 inclusion proof)',
        description:
          '409 `not_yet_checkpointed` (with `Retry-After`) for a log not in a checkpoint yet; it is within two ' +
          'checkpoint periods of being written.',
      }),
      ApiOkResponse({ type: LogProofDto }),
    ),
};
