import { Global, Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { AuditChainRepository } from './audit-chain.repository';
import { AuditChainService } from './audit-chain.service';
import { AuditCheckpointer } from './audit-checkpointer.service';
import { AuditLogReadsRepository } from './audit-log-reads.repository';
import { SystemLog } from './system-log';
import { AuditLogsRepository } from './audit-logs.repository';
import { AuditProofs } from './audit-proofs.service';
import { AuditSigningKeysRepository } from './audit-signing-keys.repository';
import { AuditSigningKeys } from './audit-signing-keys.service';
import { AuditTrail } from './audit-trail.service';
import { AuditTreeRepository } from './audit-tree.repository';
import { AuditVerifier } from './audit-verifier.service';
import { AuditInterceptor } from './audit.interceptor';
import { AuditChainHeadEntity } from './entities/audit-chain-head.entity';
import { AuditLogEntity } from './entities/audit-log.entity';
import {
  AuditCheckpointEntity,
  AuditLeafEntity,
  AuditSigningKeyEntity,
  AuditTreeCursorEntity,
  AuditTreeEntity,
  AuditTreeTileEntity,
} from './entities/audit-tree.entity';

/**
 * Audit recording, shared by the HTTP application and the CLI, and the one owner of `audit_logs` and its
 * tree: rows are written with their change (AuditLogsRepository), appended to their tenant's tree and
 * checkpointed off the request path (AuditCheckpointer), proven (AuditProofs), verified (AuditVerifier,
 * with the old chain's AuditChainService), and read for `GET /logs` and purged past retention.
 */
@Global()
@Module({
  imports: [
    DatabaseModule.forFeature([
      AuditLogEntity,
      AuditChainHeadEntity,
      AuditTreeEntity,
      AuditTreeTileEntity,
      AuditLeafEntity,
      AuditTreeCursorEntity,
      AuditCheckpointEntity,
      AuditSigningKeyEntity,
    ]),
  ],
  providers: [
    AuditLogsRepository,
    AuditLogReadsRepository,
    AuditChainRepository,
    AuditTreeRepository,
    AuditSigningKeysRepository,
    AuditTrail,
    AuditInterceptor,
    AuditChainService,
    AuditSigningKeys,
    AuditCheckpointer,
    AuditProofs,
    AuditVerifier,
    SystemLog,
  ],
  exports: [
    SystemLog,
    AuditLogReadsRepository,
    AuditTreeRepository,
    AuditTrail,
    AuditInterceptor,
    AuditCheckpointer,
    AuditProofs,
    AuditSigningKeys,
    AuditVerifier,
  ],
})
export class AuditModule {}
