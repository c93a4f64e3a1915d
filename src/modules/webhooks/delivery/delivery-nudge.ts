import { Injectable } from '@nestjs/common';

/**
 * Tells this process's delivery worker that deliveries were committed, so that it claims them at once
 * rather than at its next poll (other instances find them by polling).
 */
@Injectable()
export class DeliveryNudge {
  private listener?: () => void;

  /** The worker registers here. */
  listen(listener: () => void): void {
    this.listener = listener;
  }

  poke(): void {
    this.listener?.();
  }
}
