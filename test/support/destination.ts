import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a destination saw of one request. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A local destination for outbound tests, listening on every interface (so that 127.0.0.2 reaches it
 * too, and a refused request would be seen if it were sent). It records each request and each TCP
 * connection, and answers by the end of the path: `/redirect` 302, `/slow` after 5 s, `/large` 11 MiB,
 * `/status/<n>` with that status; anything else echoes the request as JSON with status 200 and `x-echo: yes`.
 */
export class Destination {
  readonly received: Received[] = [];
  connections = 0;
  private server!: Server;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        this.received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        // Matched on the last segment, whatever base path the proxy prefixes.
        const full = req.url!.split('?')[0];
        const path = full.slice(full.lastIndexOf('/'));
        const status = /\/status\/(\d+)$/.exec(full);
        if (path === '/redirect') {
          res.writeHead(302, { Location: 'http://127.0.0.1:1/elsewhere' }).end();
        } else if (path === '/slow') {
          setTimeout(() => res.writeHead(200).end('late'), 5000).unref();
        } else if (path === '/large') {
          // Its length announced: refused at once, whatever the machine's load (the streamed case, an
          // answer that passes the cap mid-download, is tested in test/outbound.e2e-spec.ts).
          res.writeHead(200, {
            'Content-Type': 'application/octet-stream',
            'Content-Length': 11 * 1024 * 1024,
          });
          const chunk = Buffer.alloc(1024 * 1024, 97);
          let sent = 0;
          const write = (): void => {
            while (sent < 11) {
              sent++;
              if (!res.write(chunk)) return void res.once('drain', write);
            }
            res.end();
          };
          res.on('error', () => undefined);
          write();
        } else if (status) {
          res.writeHead(Number(status[1]), { 'Content-Type': 'text/plain' }).end('status');
        } else {
          res
            .writeHead(200, {
              'Content-Type': 'application/json',
              'X-Echo': 'yes',
              'Set-Cookie': ['a=1', 'b=2'],
            })
            .end(
              JSON.stringify({
                method: req.method,
                url: req.url,
                headers: req.headers,
                body: body.toString('utf8'),
              }),
            );
        }
      });
    });
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server.listen(0, '0.0.0.0', resolve));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = ''): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  reset(): void {
    this.received.length = 0;
    this.connections = 0;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
