/**
 * The page's API: `init` opens the invisible controller frame of the vault and checks the key there;
 * `createElement` makes the card fields; `tokens.create` sends the controller a request where every
 * element is a placeholder, and receives the API's answer.
 */
import { ELEMENT_TYPES, TOKEN_REQUEST_FIELDS, randomId } from '../shared/protocol';
import type { ElementType, Envelope, FieldError, Placeholder } from '../shared/protocol';
import { ElementImpl, partRefs } from './element';
import type { Owner } from './element';
import { VaultElementsError } from './errors';
import type { Problem } from './errors';
import { FrameLink } from './frame-link';

export const VERSION = '1.0.0';
const MAX_TIMEOUT_MS = 10_000;
const TOKENIZE_TIMEOUT_MS = 30_000;

interface InitOptions {
  baseUrl: string;
  applicationId: string;
  timeoutMs?: number;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: VaultElementsError): void;
  timer: ReturnType<typeof setTimeout>;
}

export class ElementsImpl {
  private readonly elements = new Set<ElementImpl>();
  private readonly pending = new Map<string, Pending>();
  private destroyed = false;
  readonly tokens = { create: (request: unknown) => this.createToken(request) };

  constructor(
    private readonly owner: Owner,
    private readonly controller: FrameLink,
  ) {}

  createElement(type: ElementType, options?: unknown): ElementImpl {
    if (!(ELEMENT_TYPES as readonly string[]).includes(type)) {
      throw new TypeError(
        `Vault elements: unknown element type ${String(type)} (${ELEMENT_TYPES.join(', ')})`,
      );
    }
    const element = new ElementImpl(this.owner, type, options);
    this.elements.add(element);
    return element;
  }

  destroy(): void {
    this.destroyed = true;
    for (const element of this.elements) element.unmount();
    this.controller.close();
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new VaultElementsError('destroyed', 'destroy() was called'));
      this.pending.delete(id);
    }
  }

  /** The controller's answers to tokenize requests. */
  receive(message: Envelope): void {
    if (message.type !== 'tokenize-result' || typeof message.id !== 'string') return;
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    clearTimeout(pending.timer);
    if (message.error) {
      pending.reject(errorOf(message, 'tokenize_failed'));
      return;
    }
    const status = Number(message.status);
    if (status >= 200 && status < 300) {
      pending.resolve(message.body);
      return;
    }
    const problem = (
      typeof message.body === 'object' && message.body !== null ? message.body : { status }
    ) as Problem;
    pending.reject(
      new VaultElementsError(
        'api_error',
        `the vault answered ${status}${problem.detail ? `: ${problem.detail}` : ''}`,
        {
          status,
          problem,
        },
      ),
    );
  }

  private async createToken(request: unknown): Promise<unknown> {
    if (this.destroyed) throw new VaultElementsError('destroyed', 'destroy() was called');
    if (typeof request !== 'object' || request === null) {
      throw new TypeError('Vault elements: tokens.create needs {type: "card", data}');
    }
    const fields = request as Record<string, unknown>;
    if (fields.type !== 'card')
      throw new TypeError('Vault elements: only card tokens are created from elements');
    for (const field of Object.keys(fields)) {
      if (!(TOKEN_REQUEST_FIELDS as readonly string[]).includes(field)) {
        throw new TypeError(`Vault elements: ${field} cannot be set in tokens.create`);
      }
      if (field !== 'data' && holdsElement(fields[field])) {
        throw new TypeError(`Vault elements: ${field} cannot hold an element`);
      }
    }
    const used: ElementImpl[] = [];
    const data = this.encode(fields.data, used);
    // The page knows every element's state from its last change: an incomplete card never leaves.
    const errors: FieldError[] = [];
    for (const element of used) {
      if (!element.mounted) {
        throw new VaultElementsError('element_not_mounted', `the ${element.type} element is not mounted`);
      }
      if (!element.state.complete) errors.push(...element.state.errors);
    }
    if (errors.length > 0) {
      const names = errors.map((e) => `${e.field} ${e.type}`).join(', ');
      throw new VaultElementsError('incomplete_card', `the card is not complete or not valid (${names})`, {
        errors: errors.map((e) => ({ ...e })),
      });
    }
    const body: Record<string, unknown> = { ...fields, data };
    const id = randomId();
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new VaultElementsError('timeout', 'the vault did not answer in time'));
      }, TOKENIZE_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.controller.post('tokenize', { id, request: body });
    });
  }

  /** `data` with every element, and every month()/year() reference, replaced by its placeholder. */
  private encode(data: unknown, used: ElementImpl[]): unknown {
    const placeholder = (value: unknown, kinds: ElementType[], part?: 'month' | 'year'): Placeholder => {
      let element: ElementImpl | undefined;
      if (value instanceof ElementImpl && part === undefined) element = value;
      const ref = typeof value === 'object' && value !== null ? partRefs.get(value) : undefined;
      if (ref && ref.part === part) element = ref.element;
      if (!element || !kinds.includes(element.type)) {
        throw new TypeError(
          `Vault elements: ${part ? `expiration_${part} must be expiryElement.${part}()` : `the value must be a ${kinds.join(' or ')} element`}`,
        );
      }
      if (!this.elements.has(element))
        throw new TypeError('Vault elements: the element belongs to another init');
      used.push(element);
      return part ? { $element: element.channel, part } : { $element: element.channel };
    };
    if (data instanceof ElementImpl) return placeholder(data, ['card']);
    if (typeof data !== 'object' || data === null) {
      throw new TypeError(
        'Vault elements: data must be a card element or {number, expiration_month, expiration_year, cvc?}',
      );
    }
    const parts = data as Record<string, unknown>;
    for (const name of Object.keys(parts)) {
      if (!['number', 'expiration_month', 'expiration_year', 'cvc'].includes(name)) {
        throw new TypeError(`Vault elements: data.${name} is not a card field`);
      }
    }
    const encoded: Record<string, Placeholder> = {
      number: placeholder(parts.number, ['cardNumber', 'card']),
      expiration_month: placeholder(parts.expiration_month, ['cardExpirationDate'], 'month'),
      expiration_year: placeholder(parts.expiration_year, ['cardExpirationDate'], 'year'),
    };
    if (parts.cvc !== undefined) encoded.cvc = placeholder(parts.cvc, ['cardVerificationCode', 'card']);
    return encoded;
  }
}

/** The error a frame reported (a code and a message, never a value). */
function errorOf(message: Envelope, fallback: string): VaultElementsError {
  const error = (typeof message.error === 'object' && message.error !== null ? message.error : {}) as {
    code?: unknown;
    message?: unknown;
  };
  return new VaultElementsError(
    typeof error.code === 'string' ? error.code : fallback,
    typeof error.message === 'string' ? error.message : fallback.replace('_', ' '),
  );
}

function holdsElement(value: unknown, depth = 0): boolean {
  if (value instanceof ElementImpl || (typeof value === 'object' && value !== null && partRefs.has(value)))
    return true;
  if (typeof value !== 'object' || value === null || depth > 10) return false;
  return Object.values(value).some((v) => holdsElement(v, depth + 1));
}

function whenBodyReady(): Promise<HTMLElement> {
  if (document.body) return Promise.resolve(document.body);
  return new Promise((resolve) => {
    document.addEventListener('DOMContentLoaded', () => resolve(document.body), { once: true });
  });
}

export async function init(key: string, options: InitOptions): Promise<ElementsImpl> {
  if (typeof key !== 'string' || key.length === 0)
    throw new VaultElementsError('invalid_key', 'init needs a key');
  if (typeof options !== 'object' || options === null) {
    throw new VaultElementsError('invalid_options', 'init needs {baseUrl, applicationId}');
  }
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch {
    throw new VaultElementsError(
      'invalid_options',
      'baseUrl must be an absolute URL such as https://vault.example',
    );
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') {
    throw new VaultElementsError('invalid_options', 'baseUrl must be an http(s) URL');
  }
  if (typeof options.applicationId !== 'string' || options.applicationId.length === 0) {
    throw new VaultElementsError('invalid_options', 'applicationId is required');
  }
  const timeoutMs = Math.min(
    MAX_TIMEOUT_MS,
    typeof options.timeoutMs === 'number' && options.timeoutMs > 0 ? options.timeoutMs : MAX_TIMEOUT_MS,
  );
  const deadline = Date.now() + timeoutMs;
  const owner: Owner = {
    vaultOrigin: base.origin,
    base: `${base.origin}${base.pathname.replace(/\/?$/, '/')}`,
    applicationId: options.applicationId,
    group: randomId(),
    timeoutMs,
  };
  /** Who takes the controller's messages: `init` until the key is checked, then the Elements. */
  const route: { elements?: ElementsImpl; answer?: (message: Envelope) => void } = {};
  const controller = new FrameLink({
    vaultOrigin: owner.vaultOrigin,
    base: owner.base,
    applicationId: owner.applicationId,
    kind: 'controller',
    channel: randomId(),
    group: owner.group,
    onMessage: (message) => (route.elements ? route.elements.receive(message) : route.answer?.(message)),
  });
  const iframe = controller.iframe;
  iframe.title = 'Vault elements (hidden)';
  iframe.tabIndex = -1;
  iframe.setAttribute('aria-hidden', 'true');
  iframe.style.display = 'none';
  try {
    await controller.open(await whenBodyReady(), deadline);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new VaultElementsError('timeout', 'the vault did not check the key in time')),
        Math.max(0, deadline - Date.now()),
      );
      route.answer = (message) => {
        if (message.type === 'initialized') {
          clearTimeout(timer);
          resolve();
        } else if (message.type === 'init-error') {
          clearTimeout(timer);
          reject(errorOf(message, 'init_failed'));
        }
      };
      controller.post('init', { key });
    });
  } catch (error) {
    controller.close();
    throw error;
  }
  route.elements = new ElementsImpl(owner, controller);
  return route.elements;
}
