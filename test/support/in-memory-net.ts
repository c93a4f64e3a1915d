import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import net from 'node:net';
import { duplexPair, type Duplex } from 'node:stream';

/**
 * Destinations on the other end of `net.connect` without a socket, for the quick tier (no-sockets.ts):
 * an HTTP server per address, reached through a pair of in-memory streams. A connection resolves its host
 * with the `lookup` its caller gave `net.connect` (as net does), then lands on that address, or on
 * `landOn` when a spec makes it (a name that resolves to one address when checked and another when used).
 * The bytes, Node's HTTP parsing and the client's are the real ones; only the transport is memory.
 */
export class InMemoryNetwork {
  private readonly servers = new Map<string, Server>();
  /** The address each connection reached, in order. */
  readonly connections: string[] = [];
  /** Every connection lands here, whatever the lookup said. */
  landOn?: string;
  private spy?: jest.SpyInstance;

  /** An HTTP server answering at `address` (not listening: connections are handed to it). */
  serve(address: string, handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
    const server = createServer(handler);
    this.servers.set(address, server);
    return server;
  }

  /** Replaces `net.connect` until `uninstall`. */
  install(): void {
    this.spy = jest
      .spyOn(net, 'connect')
      .mockImplementation(((options: net.NetConnectOpts) =>
        this.connect(options as net.TcpNetConnectOpts)) as typeof net.connect);
  }

  uninstall(): void {
    this.spy?.mockRestore();
  }

  private connect(options: net.TcpNetConnectOpts): net.Socket {
    const [client, served] = duplexPair();
    const socket = dressed(client);
    const fail = (error: Error) => process.nextTick(() => socket.destroy(error));
    const reach = (address: string) => {
      const landed = this.landOn ?? address;
      this.connections.push(landed);
      const server = this.servers.get(landed);
      if (!server) return fail(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }));
      Object.assign(socket, { remoteAddress: landed, remotePort: options.port });
      server.emit('connection', dressed(served));
      process.nextTick(() => socket.emit('connect'));
    };
    const host = options.host ?? 'localhost';
    if (net.isIP(host) || !options.lookup) reach(host);
    else
      options.lookup(host, { family: 0 }, (error, address) => {
        if (error) fail(error);
        else reach(typeof address === 'string' ? address : address[0].address);
      });
    return socket;
  }
}

/** A stream dressed as the TCP socket the HTTP client and server expect (what they call of one). */
function dressed(stream: Duplex): net.Socket {
  return Object.assign(stream, {
    remoteAddress: undefined as string | undefined,
    remoteFamily: 'IPv4',
    localAddress: '192.0.2.1',
    localPort: 40000,
    setNoDelay: () => stream,
    setKeepAlive: () => stream,
    setTimeout: () => stream,
    ref: () => stream,
    unref: () => stream,
  }) as unknown as net.Socket;
}
