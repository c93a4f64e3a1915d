/**
 * The messages between the merchant's page, the vault's iframes and, inside the vault's origin, between
 * the iframes of one `init` (a BroadcastChannel). No message to the page ever carries a card value.
 */

/** Every postMessage between the page and a frame is tagged so that other messages are ignored. */
export const TAG = 'vault-elements/v1';

export const ELEMENT_TYPES = ['card', 'cardNumber', 'cardExpirationDate', 'cardVerificationCode'] as const;
export type ElementType = (typeof ELEMENT_TYPES)[number];
/** What the frame URL's `element` names: a field element or the invisible controller of an `init`. */
export type FrameKind = ElementType | 'controller';

export type FieldName = 'number' | 'expiration_date' | 'cvc';
export type ErrorType = 'incomplete' | 'invalid';
export interface FieldError {
  field: FieldName;
  type: ErrorType;
}

/** What a `change` event says of an element: never a value, and the last four only once complete. */
export interface ChangeState {
  complete: boolean;
  empty: boolean;
  errors: FieldError[];
  cardBrand: string | null;
  cardLast4?: string;
}

/** The parts of a split expiry that `tokens.create` can name. */
export type ExpiryPart = 'month' | 'year';

/** How the page names an element's value in a tokenize request sent to the controller frame. */
export interface Placeholder {
  $element: string;
  part?: ExpiryPart;
}

export function isPlaceholder(value: unknown): value is Placeholder {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { $element?: unknown }).$element === 'string'
  );
}

/** The envelope of a postMessage between the page and a frame. */
export interface Envelope {
  tag: typeof TAG;
  /** The channel id of the mount (or of the controller): a random id the page put in the frame URL. */
  ch: string;
  type: string;
  [key: string]: unknown;
}

export function isEnvelope(data: unknown, channel: string): data is Envelope {
  if (typeof data !== 'object' || data === null) return false;
  const message = data as Partial<Envelope>;
  return message.tag === TAG && message.ch === channel && typeof message.type === 'string';
}

/** A random id for a channel or a group: 128 bits from the platform's CSPRNG, hex. */
export function randomId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

export const ID_PATTERN = /^[0-9a-f]{32}$/;

/** The frame URL's hash: its channel, its group (the BroadcastChannel of one `init`) and the page's origin. */
export interface FrameHash {
  channel: string;
  group: string;
  origin: string;
}

export function encodeHash(hash: FrameHash): string {
  return new URLSearchParams({ c: hash.channel, g: hash.group, o: hash.origin }).toString();
}

export function decodeHash(hash: string): FrameHash | null {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const channel = params.get('c') ?? '';
  const group = params.get('g') ?? '';
  const origin = params.get('o') ?? '';
  if (!ID_PATTERN.test(channel) || !ID_PATTERN.test(group)) return null;
  return { channel, group, origin };
}

/** The name of the BroadcastChannel shared by the controller and the element frames of one `init`. */
export const groupChannelName = (group: string): string => `vault-elements:${group}`;

/** What a field frame answers the controller's `collect` (inside the vault's origin only). */
export interface CollectedValues {
  number?: string;
  expiration_month?: number;
  expiration_year?: number;
  cvc?: string;
}

/** The keys a page may send in a tokenize request; the data is checked apart. */
export const TOKEN_REQUEST_FIELDS = ['type', 'data', 'metadata', 'containers', 'expires_at', 'id'] as const;
