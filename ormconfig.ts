import 'reflect-metadata';
import { loadConfig } from './src/config/load-config';
import { createDataSource } from './src/database/data-source';

/**
 * The data source for the TypeORM CLI (`npm run typeorm -- migration:run`, `migration:show`): the same
 * one the app and the CLI build, embedded PGlite unless DATABASE_URL is set.
 */
export default createDataSource(loadConfig());
