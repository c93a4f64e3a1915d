import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeyAuthenticator, ApiKeyGuard } from './api-key.guard';
import { PermissionsGuard } from './permissions.guard';
import { PrincipalResolvers } from './principal-resolver';

/** Authentication then authorization, as global guards, in that order. */
@Global()
@Module({
  providers: [
    PrincipalResolvers,
    ApiKeyAuthenticator,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_GUARD, useClass: PermissionsGuard },
  ],
  exports: [PrincipalResolvers, ApiKeyAuthenticator],
})
export class AuthModule {}
