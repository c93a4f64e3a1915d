import { Global, Module } from '@nestjs/common';
import { AuditChainRepository } from './audit-chain.repository';
import { AuditChainService } from './audit-chain.service';
import { AuditLogsRepository } from './audit-logs.repository';
import { AuditTrail } from './audit-trail.service';
import { AuditInterceptor } from './audit.interceptor';

/** Audit recording, shared by the HTTP application (through the interceptor) and the CLI. */
@Global()
@Module({
  providers: [AuditLogsRepository, AuditChainRepository, AuditTrail, AuditInterceptor, AuditChainService],
  exports: [AuditTrail, AuditInterceptor, AuditChainService],
})
export class AuditModule {}
