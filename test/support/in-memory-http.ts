import { Agent, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { duplexPair, type Duplex } from 'node:stream';
import request from 'supertest';

/**
 * supertest on an HTTP server without a socket: each connection is a pair of in-memory streams, one end
 * handed to the server as a connection, the other to the client. The quick tier then opens no port (and
 * waits on no kernel): the bytes on the wire, Node's HTTP parsing and Express are the same.
 */

/** A stream dressed as the loopback TCP socket the HTTP client and server expect (what they call of one). */
function asSocket(stream: Duplex): Socket {
  return Object.assign(stream, {
    remoteAddress: '127.0.0.1',
    remoteFamily: 'IPv4',
    remotePort: 40000,
    localAddress: '127.0.0.1',
    localPort: 80,
    setNoDelay: () => stream,
    setKeepAlive: () => stream,
    setTimeout: () => stream,
    ref: () => stream,
    unref: () => stream,
    destroySoon: () => (stream.writable ? stream.end() : stream.destroy()),
  }) as unknown as Socket;
}

/** An agent whose every connection reaches `server` in memory. */
class InMemoryAgent extends Agent {
  constructor(private readonly server: Server) {
    super({ keepAlive: false });
  }

  override createConnection(): Socket {
    const [client, served] = duplexPair();
    this.server.emit('connection', asSocket(served));
    return asSocket(client);
  }
}

type Requests = ReturnType<typeof request>;

/** `request(server)` of supertest, every request going through memory. */
export function inMemoryRequest(server: Server): Requests {
  const agent = new InMemoryAgent(server);
  // supertest starts a server that has no address on a port of its own: this one seems to listen already.
  server.address = () => ({ address: '127.0.0.1', family: 'IPv4', port: 80 });
  const requests = request(server);
  return new Proxy(requests, {
    // Every method (get, post, ...) makes a request: it goes through the agent.
    get: (target, property, receiver) => {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        (Reflect.apply(value, target, args) as ReturnType<Requests['get']>).agent(agent);
    },
  });
}
