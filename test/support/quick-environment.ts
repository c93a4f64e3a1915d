import { TestEnvironment } from 'jest-environment-node';
import { refuseSockets } from './no-sockets';

/**
 * The quick tier's test environment (unit, service and controller projects): Node's, with sockets refused
 * while a spec file runs and allowed again when it ends, so that a later spec file of another tier in the
 * same worker (`npm test` runs every project in one pool of workers) opens its sockets.
 */
export class QuickEnvironment extends TestEnvironment {
  private allowSockets?: () => void;

  override async setup(): Promise<void> {
    await super.setup();
    this.allowSockets = refuseSockets();
  }

  override async teardown(): Promise<void> {
    this.allowSockets?.();
    this.allowSockets = undefined;
    await super.teardown();
  }
}

export default QuickEnvironment;
