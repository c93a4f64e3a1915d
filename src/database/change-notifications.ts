import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import { AppConfig } from '../config/app-config';
import { ChangeNotificationsRepository } from './change-notifications.repository';

/** The channel the database announces changes on (migration 20's triggers); the payload names the table. */
export const CHANGES_CHANNEL = 'vault_changes';

/** A table whose changes are announced, or undefined for "anything may have changed" (listening resumed or lost). */
export type ChangedTable = 'api_keys' | 'applications' | 'flow_rules' | 'tenant_data_keys' | undefined;

/**
 * One dedicated connection LISTENing for change notifications, so that every instance drops what it
 * cached as soon as another commits a change. `listening` is true only while the connection is up:
 * a cache must not serve from memory while it could miss a notification (then it asks the database).
 * With the embedded database there is one process and no connection to listen on: never listening.
 */
@Injectable()
export class ChangeNotifications implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ChangeNotifications');
  private readonly handlers: ((table: ChangedTable) => void)[] = [];
  private client: Client | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  listening = false;

  constructor(private readonly config: AppConfig) {}

  /** Called (synchronously) on every notification, and whenever listening stops or starts again. */
  onChange(handler: (table: ChangedTable) => void): void {
    this.handlers.push(handler);
  }

  async onModuleInit(): Promise<void> {
    if (this.config.DATABASE_URL) await this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.lost();
    await this.client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    // LISTEN needs a session of its own: behind a pooler in transaction mode, DATABASE_LISTEN_URL bypasses it.
    const client = new Client({
      connectionString: this.config.DATABASE_LISTEN_URL ?? this.config.DATABASE_URL,
    });
    client.on('notification', (message) => this.changed(message.payload as ChangedTable));
    client.on('error', () => this.reconnect(client));
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await new ChangeNotificationsRepository(client).listen(CHANGES_CHANNEL);
      this.client = client;
      this.listening = true;
      // Anything may have changed while not listening.
      this.changed();
    } catch (error) {
      this.logger.warn({ err: error }, 'cannot listen for key changes; caching of keys is off until it can');
      this.reconnect(client);
    }
  }

  private reconnect(client: Client): void {
    if (client !== this.client && this.client !== undefined) return;
    this.lost();
    client.removeAllListeners();
    void client.end().catch(() => undefined);
    this.client = undefined;
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (!this.stopped) void this.connect();
    }, 1_000);
  }

  private lost(): void {
    this.listening = false;
    this.changed();
  }

  private changed(table?: ChangedTable): void {
    for (const handler of this.handlers) handler(table);
  }
}
