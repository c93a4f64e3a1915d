import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { ChangeNotifications } from './change-notifications';
import { EntityClass, openDatabase } from './data-source';
import { tableOf } from './table';

/**
 * The entity classes of the service, registered by the modules that own them (`DatabaseModule.forFeature`)
 * when their module files load, so before the data source opens: database/ knows no domain.
 */
const registeredEntities = new Set<EntityClass>();

/** What `forFeature` returns: the registration is the point, the module itself provides nothing. */
@Module({})
class DatabaseFeatureModule {}

/**
 * Provides the one DataSource of the process (embedded PGlite, or DATABASE_URL), opened and migrated
 * under an advisory lock before anything else starts; destroyed last on shutdown.
 */
@Global()
@Module({
  providers: [
    ChangeNotifications,
    {
      provide: DataSource,
      inject: [AppConfig],
      useFactory: (config: AppConfig) => openDatabase(config, [...registeredEntities]),
    },
  ],
  exports: [DataSource, ChangeNotifications],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  /** Registers the entities a module owns (in its `imports`), as TypeORM's `forFeature` does. */
  static forFeature(entities: EntityClass[]): DynamicModule {
    for (const entity of entities) {
      // Fails here, as the module file loads, when the entity's columns break the naming `RowOf` relies on.
      tableOf(entity);
      registeredEntities.add(entity);
    }
    return { module: DatabaseFeatureModule };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.dataSource.destroy();
  }
}
