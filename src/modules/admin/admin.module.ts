import { DynamicModule, Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { TenantsModule } from '../tenants/tenants.module';
import { DataKeyRotationModule } from '../tokens/rotation/data-key-rotation.module';
import { AdminOperations } from './admin-operations';
import { ProviderChange } from './provider-change';
import { ControlSocketService } from './control-socket.service';
import { InstanceEntity } from './entities/instance.entity';
import { InstanceHeartbeatService } from './instance-heartbeat.service';
import { InstancesRepository } from './instances.repository';

/** Operator operations: run by the CLI in its own process, or by the server for the CLI (control socket). */
@Module({ imports: [DatabaseModule.forFeature([InstanceEntity])] })
export class AdminModule {
  /**
   * `controlSocket`: serve the CLI's requests (embedded database); `heartbeat`: publish this process
   * in `instances` (servers, not the CLI).
   */
  static forRoot(options: { controlSocket: boolean; heartbeat: boolean }): DynamicModule {
    return {
      module: AdminModule,
      imports: [TenantsModule, DataKeyRotationModule],
      providers: [
        AdminOperations,
        ProviderChange,
        InstancesRepository,
        ...(options.controlSocket ? [ControlSocketService] : []),
        ...(options.heartbeat ? [InstanceHeartbeatService] : []),
      ],
      exports: [AdminOperations],
    };
  }
}
