import { closeServiceDatabase } from './service-environment';

/** The service project's global teardown: an in-band run's PGlite closed (service-environment.ts). */
export default closeServiceDatabase;
