import { Global, Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { AuditChainRepository } from './audit-chain.repository';
import { AuditChainService } from './audit-chain.service';
import { AuditLogsRepository } from './audit-logs.repository';
import { AuditTrail } from './audit-trail.service';
import { AuditInterceptor } from './audit.interceptor';
import { AuditChainHeadEntity } from './entities/audit-chain-head.entity';
import { AuditLogEntity } from './entities/audit-log.entity';

/** Audit recording, shared by the HTTP application (through the interceptor) and the CLI. */
@Global()
@Module({
  imports: [DatabaseModule.forFeature([AuditLogEntity, AuditChainHeadEntity])],
  providers: [AuditLogsRepository, AuditChainRepository, AuditTrail, AuditInterceptor, AuditChainService],
  exports: [AuditTrail, AuditInterceptor, AuditChainService],
})
export class AuditModule {}
