import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeyGuard } from './api-key.guard';
import { PermissionsGuard } from './permissions.guard';
import { PrincipalResolvers } from './principal-resolver';

/** Authentication then authorization, as global guards, in that order. */
@Global()
@Module({
  providers: [
    PrincipalResolvers,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_GUARD, useClass: PermissionsGuard },
  ],
  exports: [PrincipalResolvers],
})
export class AuthModule {}
