/**
 * An element on the page: the iframe where one card field (or all three) is typed, its events, and the
 * last state it reported (for `tokens.create` to refuse an incomplete card without a request).
 */
import { randomId } from '../shared/protocol';
import type { ChangeState, ElementType, Envelope, ExpiryPart } from '../shared/protocol';
import { sanitizeStyle } from '../shared/style';
import type { Style } from '../shared/style';
import { VaultElementsError } from './errors';
import { FrameLink } from './frame-link';

export type EventName = 'change' | 'ready' | 'focus' | 'blur' | 'error';
const EVENTS: readonly string[] = ['change', 'ready', 'focus', 'blur', 'error'];
type Handler = (event: never) => void;

/** What an element needs of its `init`. */
export interface Owner {
  vaultOrigin: string;
  base: string;
  applicationId: string;
  group: string;
  timeoutMs: number;
}

const TITLES: Record<ElementType, string> = {
  card: 'Secure card payment fields',
  cardNumber: 'Secure card number field',
  cardExpirationDate: 'Secure card expiration date field',
  cardVerificationCode: 'Secure card security code field',
};

const INITIAL_STATE: ChangeState = {
  complete: false,
  empty: true,
  errors: [],
  cardBrand: null,
};

interface Options {
  style?: Style;
  placeholder?: unknown;
}

/** The opaque references `month()` and `year()` return, and the element they name. */
export const partRefs = new WeakMap<object, { element: ElementImpl; part: ExpiryPart }>();

export class ElementImpl {
  private handlers = new Map<string, Set<Handler>>();
  private link: FrameLink | null = null;
  private options: Options;
  private ready = false;
  /** The channel of the current mount; a new one at every mount. */
  channel = '';
  state: ChangeState = INITIAL_STATE;

  constructor(
    readonly owner: Owner,
    readonly type: ElementType,
    options: unknown,
  ) {
    this.options = checkOptions(options);
  }

  get mounted(): boolean {
    return this.link !== null && this.ready;
  }

  mount(target: string | HTMLElement): Promise<void> {
    if (this.link)
      return Promise.reject(
        new VaultElementsError('already_mounted', `the ${this.type} element is already mounted`),
      );
    const container = typeof target === 'string' ? document.querySelector(target) : target;
    if (!(container instanceof HTMLElement)) {
      return Promise.reject(
        new VaultElementsError('invalid_target', 'mount needs a CSS selector or an element of the page'),
      );
    }
    const deadline = Date.now() + this.owner.timeoutMs;
    this.channel = randomId();
    this.state = INITIAL_STATE;
    this.ready = false;
    let onReady: (() => void) | null = null;
    const link = new FrameLink({
      vaultOrigin: this.owner.vaultOrigin,
      base: this.owner.base,
      applicationId: this.owner.applicationId,
      kind: this.type,
      channel: this.channel,
      group: this.owner.group,
      onMessage: (message) => {
        if (message.type === 'ready') {
          this.resize(message.height);
          onReady?.();
        } else this.receive(message);
      },
    });
    this.link = link;
    const iframe = link.iframe;
    iframe.title = TITLES[this.type];
    iframe.setAttribute('frameborder', '0');
    iframe.setAttribute('allowtransparency', 'true');
    iframe.setAttribute('scrolling', 'no');
    const css = iframe.style;
    css.border = '0';
    css.margin = '0';
    css.padding = '0';
    css.width = '100%';
    css.minWidth = '100%';
    css.height = '38px';
    css.display = 'block';
    css.overflow = 'hidden';
    css.background = 'transparent';
    css.colorScheme = 'normal';

    return link
      .open(container, deadline)
      .then(
        () =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () =>
                reject(
                  new VaultElementsError('timeout', `the ${this.type} element did not get ready in time`),
                ),
              Math.max(0, deadline - Date.now()),
            );
            onReady = () => {
              clearTimeout(timer);
              onReady = null;
              resolve();
            };
            link.post('configure', { style: this.options.style, placeholder: this.options.placeholder });
          }),
      )
      .then(
        () => {
          this.ready = true;
          this.emit('ready', { elementType: this.type });
        },
        (error: VaultElementsError) => {
          if (this.link === link) {
            link.close();
            this.link = null;
          }
          this.emit('error', { elementType: this.type, error: { code: error.code, message: error.message } });
          throw error;
        },
      );
  }

  unmount(): void {
    this.link?.close();
    this.link = null;
    this.ready = false;
    this.state = INITIAL_STATE;
  }

  update(options: unknown): void {
    const checked = checkOptions(options);
    if (checked.style !== undefined) this.options.style = checked.style;
    if (checked.placeholder !== undefined) this.options.placeholder = checked.placeholder;
    this.link?.post('update', { style: checked.style, placeholder: checked.placeholder });
  }

  clear(): void {
    this.link?.post('clear');
  }

  focus(): void {
    if (!this.link) return;
    this.link.iframe.focus();
    this.link.post('focus');
  }

  on(event: EventName, handler: Handler): this {
    if (!EVENTS.includes(event)) throw new TypeError(`Vault elements: unknown event ${String(event)}`);
    if (typeof handler !== 'function') throw new TypeError('Vault elements: the handler must be a function');
    let set = this.handlers.get(event);
    if (!set) this.handlers.set(event, (set = new Set()));
    set.add(handler);
    return this;
  }

  off(event: EventName, handler: Handler): this {
    this.handlers.get(event)?.delete(handler);
    return this;
  }

  /** For `cardExpirationDate`: opaque references for `tokens.create`. */
  month(): object {
    return this.partRef('month');
  }

  year(): object {
    return this.partRef('year');
  }

  private partRef(part: ExpiryPart): object {
    if (this.type !== 'cardExpirationDate') {
      throw new TypeError(`Vault elements: ${part}() is a method of cardExpirationDate elements`);
    }
    const ref = Object.freeze({ part });
    partRefs.set(ref, { element: this, part });
    return ref;
  }

  private receive(message: Envelope): void {
    switch (message.type) {
      case 'change': {
        const state = message.state as ChangeState;
        this.state = {
          complete: state.complete === true,
          empty: state.empty === true,
          errors: Array.isArray(state.errors)
            ? state.errors.map((e) => ({ field: e.field, type: e.type }))
            : [],
          cardBrand: typeof state.cardBrand === 'string' ? state.cardBrand : null,
          ...(typeof state.cardLast4 === 'string' && /^\d{4}$/.test(state.cardLast4)
            ? { cardLast4: state.cardLast4 }
            : {}),
        };
        this.emit('change', {
          elementType: this.type,
          ...this.state,
          errors: this.state.errors.map((e) => ({ ...e })),
        });
        return;
      }
      case 'focus':
      case 'blur':
        this.emit(message.type, { elementType: this.type });
        return;
      case 'resize':
        this.resize(message.height);
        return;
    }
  }

  private resize(height: unknown): void {
    if (this.link && typeof height === 'number' && height > 0 && height < 1000) {
      this.link.iframe.style.height = `${Math.ceil(height)}px`;
    }
  }

  private emit(event: EventName, payload: object): void {
    for (const handler of [...(this.handlers.get(event) ?? [])]) {
      try {
        (handler as (event: object) => void)(payload);
      } catch (error) {
        // A page handler's failure must not stop the others; reported as the browser would.
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}

function checkOptions(options: unknown): Options {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw new TypeError('Vault elements: options must be an object');
  const { style, placeholder } = options as { style?: unknown; placeholder?: unknown };
  const problems: string[] = [];
  const checked: Options = {};
  if (style !== undefined) checked.style = sanitizeStyle(style, problems);
  if (problems.length > 0) throw new TypeError(`Vault elements: ${problems.join('; ')}`);
  if (placeholder !== undefined) {
    if (typeof placeholder !== 'string' && (typeof placeholder !== 'object' || placeholder === null)) {
      throw new TypeError('Vault elements: placeholder must be a string (or, for card, an object)');
    }
    checked.placeholder = placeholder;
  }
  return checked;
}
