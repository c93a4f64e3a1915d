import { Injectable, OnModuleInit } from '@nestjs/common';
import { RetentionJob } from '../../common/jobs/retention.job';
import type { Change } from '../../common/unit-of-work/change';
import { LOCK_KEYS } from '../../database/data-source';
import { WalletsRepository } from './wallets.repository';

/** How long past its payload's expiry a transaction id is kept (a margin for clocks that disagree). */
export const WALLET_REPLAY_MARGIN_MS = 24 * 3600_000;

/**
 * Purges the replay guard, hourly: a transaction id goes a day after its payload could no longer be
 * accepted anyway (an Apple signing time 5 minutes old, a Google message past its expiration), since
 * verification refuses such a payload before its id is looked at.
 */
@Injectable()
export class WalletReplayRetention implements OnModuleInit {
  constructor(
    private readonly retention: RetentionJob,
    private readonly wallets: WalletsRepository,
  ) {}

  onModuleInit(): void {
    this.retention.register({
      name: 'wallet-replays',
      lockKey: LOCK_KEYS.jobWalletReplays,
      periodMs: 60 * 60_000,
      purge: (change, now) => this.purge(change, now),
    });
  }

  purge(change: Change, now: Date): Promise<number> {
    return this.wallets.purgeReplays(change, new Date(now.getTime() - WALLET_REPLAY_MARGIN_MS));
  }
}
