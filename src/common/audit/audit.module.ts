import { Global, Module } from '@nestjs/common';
import { AuditTrail } from './audit-trail.service';
import { AuditInterceptor } from './audit.interceptor';

/** Audit recording, shared by the HTTP application (through the interceptor) and the CLI. */
@Global()
@Module({ providers: [AuditTrail, AuditInterceptor], exports: [AuditTrail, AuditInterceptor] })
export class AuditModule {}
