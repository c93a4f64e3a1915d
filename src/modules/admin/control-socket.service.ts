import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { VaultDataSource } from '../../database/data-source';
import { AdminOperations, AdminRefusal, AdminRequest } from './admin-operations';

const MAX_REQUEST_BYTES = 64 * 1024;
// keys.rotate-to is listed to be refused by name (a change of provider is made with every server stopped).
const OPS = new Set([
  'tenant.create',
  'keys.rotate',
  'keys.rotate-tenant-keys',
  'keys.status',
  'logs.verify',
  'keys.rotate-to',
  'logs.system',
]);

/**
 * With the embedded database, the server owns it alone (embedded-lock.ts), so the CLI cannot open it
 * while the server runs. The server therefore listens on a Unix socket in a private directory (mode
 * 0700; the same trust as DATA_DIR, which holds the database and its key) and runs the CLI's requests
 * itself: one JSON line in, one JSON line out. The socket's path is published in the lock file.
 */
@Injectable()
export class ControlSocketService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ControlSocket');
  private server: Server | undefined;
  private dir: string | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly operations: AdminOperations,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const embedded = (this.dataSource as VaultDataSource).embedded;
    if (!embedded) return;
    this.dir = mkdtempSync(join(tmpdir(), 'vault-ctl-'));
    const path = join(this.dir, 'control.sock');
    this.server = createServer((socket) => this.serve(socket));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(path, () => resolve());
    });
    this.server.unref();
    embedded.lock.setControl(path);
  }

  private serve(socket: Socket): void {
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      if (buffer.length > MAX_REQUEST_BYTES) return void socket.destroy();
      const end = buffer.indexOf('\n');
      if (end < 0) return;
      socket.removeAllListeners('data');
      void this.answer(buffer.slice(0, end)).then((reply) => socket.end(`${JSON.stringify(reply)}\n`));
    });
  }

  private async answer(line: string): Promise<{ ok: true; result: unknown } | { ok: false; error: string }> {
    let request: AdminRequest;
    try {
      request = JSON.parse(line) as AdminRequest;
      if (!OPS.has(request?.op)) throw new Error('unknown operation');
    } catch {
      return { ok: false, error: 'malformed request' };
    }
    try {
      return { ok: true, result: await this.operations.run(request) };
    } catch (error) {
      // A refusal (keys rotate while a server lacks the version) is the operator's to fix: one line.
      if (error instanceof AdminRefusal)
        this.logger.warn(`control request ${request.op} refused: ${error.message}`);
      else
        this.logger.error(
          `control request ${request.op} failed`,
          error instanceof Error ? error.stack : undefined,
        );
      return { ok: false, error: error instanceof Error ? error.message : 'failed' };
    }
  }

  async onApplicationShutdown(): Promise<void> {
    (this.dataSource as VaultDataSource).embedded?.lock.setControl(undefined);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
