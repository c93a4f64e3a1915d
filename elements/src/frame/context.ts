/**
 * Who embeds this frame, and the only two ways it talks: postMessage with its parent (the page's exact
 * origin, checked against the application's allowed origins) and the BroadcastChannel of its `init`
 * group (the vault's origin only).
 */
import { ELEMENT_TYPES, TAG, decodeHash, groupChannelName, isEnvelope } from '../shared/protocol';
import type { Envelope, FrameHash, FrameKind } from '../shared/protocol';

export interface FrameContext {
  kind: FrameKind;
  applicationId: string;
  /** The embedding page's origin: one of the application's allowed origins. */
  parentOrigin: string;
  hash: FrameHash;
  /** Posts to the parent window, to its exact origin only. */
  post(type: string, payload?: Record<string, unknown>): void;
  /** Messages from the parent window of the parent's origin, on this frame's channel. */
  onMessage(handler: (message: Envelope) => void): void;
  /** The BroadcastChannel of this frame's `init` (same origin: the page can never listen). */
  group: BroadcastChannel;
}

function meta(name: string): string | null {
  const element = document.querySelector(`meta[name="${name}"]`);
  return element ? element.getAttribute('content') : null;
}

/** Why the frame refuses to work, for the developer's console (never a value: there is none yet). */
function refuse(reason: string): null {
  console.warn(`Vault elements: this frame will not work: ${reason}.`);
  return null;
}

/**
 * The frame's context, or null when it must stay inert: not inside a frame, unknown element, or the
 * embedding page's origin (location.ancestorOrigins, else the URL hash) is not an allowed origin.
 */
export function frameContext(): FrameContext | null {
  if (window.parent === window) return refuse('it is not inside a frame');
  const kind = meta('vault-element') as FrameKind | null;
  if (kind !== 'controller' && !(ELEMENT_TYPES as readonly string[]).includes(kind ?? '')) {
    return refuse('unknown element');
  }
  const applicationId = new URLSearchParams(location.search).get('application_id') ?? '';
  const allowed = (meta('vault-allowed-origins') ?? '').split(/\s+/).filter(Boolean);
  const hash = decodeHash(location.hash);
  if (!hash) return refuse('its URL has no channel');
  const ancestors = location.ancestorOrigins;
  const parentOrigin = ancestors && ancestors.length > 0 ? ancestors[0] : hash.origin;
  if (!allowed.includes(parentOrigin)) return refuse('the page is not of an allowed origin');

  const parent = window.parent;
  const group = new BroadcastChannel(groupChannelName(hash.group));
  return {
    kind: kind as FrameKind,
    applicationId,
    parentOrigin,
    hash,
    group,
    post(type, payload = {}) {
      parent.postMessage({ ...payload, tag: TAG, ch: hash.channel, type }, parentOrigin);
    },
    onMessage(handler) {
      window.addEventListener('message', (event: MessageEvent) => {
        if (event.source !== parent || event.origin !== parentOrigin) return;
        if (!isEnvelope(event.data, hash.channel)) return;
        handler(event.data);
      });
    },
  };
}
