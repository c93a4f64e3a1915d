/**
 * The page's end of one vault iframe: it creates the iframe, waits for the frame's `hello`, and from then
 * on exchanges messages with it, accepting only messages of the vault's origin, from that iframe's
 * window, on that mount's channel, and posting only to the vault's origin.
 */
import { TAG, encodeHash, isEnvelope } from '../shared/protocol';
import type { Envelope, FrameKind } from '../shared/protocol';
import { VaultElementsError } from './errors';

/**
 * After the iframe's `load`, how long to wait for its `hello` before calling it blocked or broken (a frame
 * blocked by frame-ancestors, or an error page, loads but never says hello); meanwhile the page asks
 * again every PING_MS, in case the first `hello` came before the page could take it.
 */
const HELLO_GRACE_MS = 4000;
const PING_MS = 250;

export interface LinkOptions {
  vaultOrigin: string;
  /** The vault's base URL, ending with `/`. */
  base: string;
  applicationId: string;
  kind: FrameKind;
  channel: string;
  group: string;
  /** Every message of the frame after its `hello`. */
  onMessage(message: Envelope): void;
}

export class FrameLink {
  readonly iframe: HTMLIFrameElement;
  private listener: ((event: MessageEvent) => void) | null = null;
  private closed = false;

  constructor(private readonly options: LinkOptions) {
    const url = new URL('elements/v1/frame.html', options.base);
    url.searchParams.set('application_id', options.applicationId);
    url.searchParams.set('element', options.kind);
    url.hash = encodeHash({ channel: options.channel, group: options.group, origin: location.origin });
    this.iframe = document.createElement('iframe');
    this.iframe.src = url.toString();
  }

  /**
   * Appends the iframe to `container` and resolves on the frame's `hello`; rejects when the frame loads
   * without saying hello (blocked by frame-ancestors, an error page) or at `deadline`.
   */
  open(container: HTMLElement, deadline: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let graceTimer: ReturnType<typeof setTimeout> | undefined;
      let pinger: ReturnType<typeof setInterval> | undefined;
      const finish = (error?: VaultElementsError): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(graceTimer);
        clearInterval(pinger);
        if (error) reject(error);
        else resolve();
      };
      const timer = setTimeout(
        () =>
          finish(
            new VaultElementsError('timeout', `the vault's frame did not answer in time (${this.where()})`),
          ),
        Math.max(0, deadline - Date.now()),
      );
      this.iframe.addEventListener('load', () => {
        if (settled || graceTimer !== undefined) return;
        pinger = setInterval(() => this.post('ping'), PING_MS);
        graceTimer = setTimeout(
          () =>
            finish(
              new VaultElementsError(
                'frame_unavailable',
                `the vault's frame did not start: is ${location.origin} in the application's allowed_origins, and is the vault reachable at ${this.options.base}?`,
              ),
            ),
          Math.min(HELLO_GRACE_MS, Math.max(0, deadline - Date.now())),
        );
      });
      this.listener = (event: MessageEvent) => {
        if (this.closed) return;
        if (event.origin !== this.options.vaultOrigin || event.source !== this.iframe.contentWindow) return;
        if (!isEnvelope(event.data, this.options.channel)) return;
        if (event.data.type === 'hello') finish();
        else if (settled) this.options.onMessage(event.data);
      };
      window.addEventListener('message', this.listener);
      container.appendChild(this.iframe);
    });
  }

  post(type: string, payload: Record<string, unknown> = {}): void {
    if (this.closed) return;
    this.iframe.contentWindow?.postMessage(
      { ...payload, tag: TAG, ch: this.options.channel, type },
      this.options.vaultOrigin,
    );
  }

  close(): void {
    this.closed = true;
    if (this.listener) window.removeEventListener('message', this.listener);
    this.listener = null;
    this.iframe.remove();
  }

  private where(): string {
    return `${this.options.base}, element ${this.options.kind}`;
  }
}
