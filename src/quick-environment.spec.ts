import { Server, Socket } from 'node:net';
import { QuickEnvironment } from '../test/support/quick-environment';

/**
 * The quick tier refuses sockets only while its own spec files run: `node:net` is shared by every file a
 * worker runs, and `npm test` gives the same workers the end-to-end files, which listen and connect.
 */
describe('the quick tier environment', () => {
  const environment = () =>
    new QuickEnvironment(
      { globalConfig: {} as never, projectConfig: { testEnvironmentOptions: {} } as never },
      { console, docblockPragmas: {}, testPath: __filename },
    );
  const methods = () => [
    Object.getOwnPropertyDescriptor(Server.prototype, 'listen')?.value as unknown,
    Object.getOwnPropertyDescriptor(Socket.prototype, 'connect')?.value as unknown,
  ];

  it('refuses listen and connect while a spec file runs, and gives them back when it ends', async () => {
    const before = methods();
    const quick = environment();
    await quick.setup();
    expect(methods()[0]).not.toBe(before[0]);
    expect(() => new Server().listen(0)).toThrow('the quick tier opens no socket (listen)');
    expect(() => new Socket().connect(1)).toThrow('the quick tier opens no socket (connect)');
    await quick.teardown();
    expect(methods()).toEqual(before);
  });
});
