import type { ClientBase } from 'pg';
import { GenerateSql } from './generate-sql';

/** The statements of the connection that listens for change notifications (`ChangeNotifications`). */
export class ChangeNotificationsRepository {
  constructor(private readonly client: Pick<ClientBase, 'query'>) {}

  /** Subscribes the connection to `channel` (a trusted identifier: a channel name cannot be a parameter). */
  @GenerateSql({ params: ['vault_changes'] })
  async listen(channel: string): Promise<void> {
    await this.client.query(`LISTEN ${channel}`);
  }
}
