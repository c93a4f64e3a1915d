import { Global, Module } from '@nestjs/common';
import { ApiKeyAuthenticator, ApiKeyGuard } from './api-key.guard';
import { PermissionsGuard } from './permissions.guard';
import { PrincipalResolvers } from './principal-resolver';

/**
 * Authentication and authorization. The guards are provided here and registered as global guards by
 * the root module, in its one ordered list (`globalEnhancers` in app.module.ts).
 */
@Global()
@Module({
  providers: [PrincipalResolvers, ApiKeyAuthenticator, ApiKeyGuard, PermissionsGuard],
  exports: [PrincipalResolvers, ApiKeyAuthenticator, ApiKeyGuard, PermissionsGuard],
})
export class AuthModule {}
