import 'reflect-metadata';
import type { INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import type { Principal } from '../../src/common/auth/principal';
import { loadConfig } from '../../src/config/load-config';
import { TenantsService } from '../../src/modules/tenants/tenants.service';

/**
 * The medium tier: services and repositories of the real application, on the run's PostgreSQL
 * database, with no HTTP in between (no guards, pipes or interceptors) and no scheduled jobs.
 */
export interface MediumContext {
  get<T>(type: Type<T>): T;
  db: DataSource;
  newTenant(): Promise<string>;
  close(): Promise<void>;
}

export async function startMedium(): Promise<MediumContext> {
  const config = loadConfig({ ...process.env, BOOTSTRAP: 'false', JOBS_ENABLED: 'false', LOG_LEVEL: 'warn' });
  const ctx: INestApplicationContext = await NestFactory.createApplicationContext(AppModule.forRoot(config), {
    logger: false,
    abortOnError: false,
  });
  await ctx.init();
  return {
    get: (type) => ctx.get(type),
    db: ctx.get(DataSource),
    newTenant: async () => (await ctx.get(TenantsService).createTenant('medium tenant')).tenant_id,
    close: () => ctx.close(),
  };
}

/** A private application's principal holding `permissions`, as the guards would resolve it. */
export function principal(tenantId: string, permissions: string[]): Principal {
  return {
    tenantId,
    applicationId: tenantId,
    applicationType: 'private',
    keyKind: 'private',
    keyId: 'medium',
    authorized: true,
    permissions,
    rules: [],
  };
}
