import { Global, Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { AuditChainRepository } from './audit-chain.repository';
import { AuditChainService } from './audit-chain.service';
import { AuditLogReadsRepository } from './audit-log-reads.repository';
import { AuditLogsRepository } from './audit-logs.repository';
import { AuditTrail } from './audit-trail.service';
import { AuditInterceptor } from './audit.interceptor';
import { AuditChainHeadEntity } from './entities/audit-chain-head.entity';
import { AuditLogEntity } from './entities/audit-log.entity';

/**
 * Audit recording, shared by the HTTP application and the CLI, and the one owner of `audit_logs`: rows are
 * written with their change (AuditLogsRepository), sealed into the chain (AuditChainRepository), and read
 * for `GET /logs` and purged past retention (AuditLogReadsRepository, used by the logs module).
 */
@Global()
@Module({
  imports: [DatabaseModule.forFeature([AuditLogEntity, AuditChainHeadEntity])],
  providers: [
    AuditLogsRepository,
    AuditLogReadsRepository,
    AuditChainRepository,
    AuditTrail,
    AuditInterceptor,
    AuditChainService,
  ],
  exports: [AuditLogReadsRepository, AuditTrail, AuditInterceptor, AuditChainService],
})
export class AuditModule {}
