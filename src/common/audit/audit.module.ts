import { Global, Module } from '@nestjs/common';
import { AuditChainService } from './audit-chain.service';
import { AuditTrail } from './audit-trail.service';
import { AuditInterceptor } from './audit.interceptor';

/** Audit recording, shared by the HTTP application (through the interceptor) and the CLI. */
@Global()
@Module({
  providers: [AuditTrail, AuditInterceptor, AuditChainService],
  exports: [AuditTrail, AuditInterceptor, AuditChainService],
})
export class AuditModule {}
