import { Server, Socket } from 'node:net';

/**
 * Set up before every spec of the quick tier (jest.config.js): it opens no socket. A spec that listens or
 * connects fails at once, saying so, rather than passing on an idle machine and failing on a loaded one:
 * what needs sockets belongs to the medium tier; supertest reaches an app in memory
 * (test/support/in-memory-http.ts).
 */
function refuse(what: string): never {
  throw new Error(`the quick tier opens no socket (${what}): use the medium tier, or in-memory-http.ts`);
}

Server.prototype.listen = function listen(): never {
  return refuse('listen');
};
Socket.prototype.connect = function connect(): never {
  return refuse('connect');
};
