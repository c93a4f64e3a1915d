import { DynamicModule, Module } from '@nestjs/common';
import { TenantsModule } from '../tenants/tenants.module';
import { AdminOperations } from './admin-operations';
import { ControlSocketService } from './control-socket.service';

/** Operator operations: run by the CLI in its own process, or by the server for the CLI (control socket). */
@Module({})
export class AdminModule {
  static forRoot(options: { controlSocket: boolean }): DynamicModule {
    return {
      module: AdminModule,
      imports: [TenantsModule],
      providers: [AdminOperations, ...(options.controlSocket ? [ControlSocketService] : [])],
      exports: [AdminOperations],
    };
  }
}
