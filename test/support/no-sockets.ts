import { Server, Socket } from 'node:net';

/**
 * The quick tier opens no socket: while its environment is set up (quick-environment.ts), a spec that
 * listens or connects fails at once, saying so, rather than passing on an idle machine and failing on a
 * loaded one: what needs sockets belongs to the medium tier; supertest reaches an app in memory
 * (test/support/in-memory-http.ts).
 *
 * `node:net` is the worker's own module, shared by every spec file the worker runs (of any project, in
 * `npm test`): the refusal is undone when the spec file ends, by calling the function answered here.
 */
export function refuseSockets(): () => void {
  const refuse = (what: string): never => {
    throw new Error(`the quick tier opens no socket (${what}): use the medium tier, or in-memory-http.ts`);
  };
  const replaced = [
    { prototype: Server.prototype, name: 'listen' },
    { prototype: Socket.prototype, name: 'connect' },
  ].map(({ prototype, name }) => {
    const own = Object.getOwnPropertyDescriptor(prototype, name)!;
    Object.defineProperty(prototype, name, { ...own, value: () => refuse(name) });
    return () => Object.defineProperty(prototype, name, own);
  });
  return () => replaced.forEach((restore) => restore());
}
