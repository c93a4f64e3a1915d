/**
 * Vault elements: card fields in iframes of the vault's origin, for a checkout page of another origin.
 * The card number, expiry and CVC stay inside the iframes; the page receives states and the token.
 *
 * As a classic script (`<script src="https://vault.example/elements/v1/elements.js">`), the API is the
 * global `VaultElements`; as an ES module, the default export of `/elements/v1/elements.mjs`.
 */
declare namespace VaultElements {
  interface InitOptions {
    /** The vault's base URL, e.g. `https://vault.example`. */
    baseUrl: string;
    /** The public application whose key (or one of whose sessions) is used; its `allowed_origins` must include the page's origin. */
    applicationId: string;
    /** How long `init` and `mount` wait for the vault's frames, in milliseconds (default and maximum 10000). */
    timeoutMs?: number;
  }

  type ElementType = 'card' | 'cardNumber' | 'cardExpirationDate' | 'cardVerificationCode';
  type StyleState = 'base' | 'empty' | 'complete' | 'focus' | 'invalid';

  /** The CSS properties a field accepts (values with `url(`, `var(`, escapes, `;` or braces are refused). */
  interface StyleDeclaration {
    color?: string;
    backgroundColor?: string;
    caretColor?: string;
    fontFamily?: string;
    fontSize?: string;
    fontStyle?: string;
    fontVariant?: string;
    fontWeight?: string | number;
    letterSpacing?: string;
    lineHeight?: string | number;
    textAlign?: string;
    textTransform?: string;
    textShadow?: string;
    padding?: string;
    paddingTop?: string;
    paddingRight?: string;
    paddingBottom?: string;
    paddingLeft?: string;
    '::placeholder'?: { color?: string };
  }

  /** Styles by state, applied in this order: base, empty, complete, focus, invalid. */
  type Style = Partial<Record<StyleState, StyleDeclaration>>;

  /** Placeholder texts of the `card` element's three inputs. */
  interface CardPlaceholders {
    number?: string;
    expirationDate?: string;
    cvc?: string;
  }

  interface ElementOptions<P = string> {
    style?: Style;
    placeholder?: P;
  }

  type FieldName = 'number' | 'expiration_date' | 'cvc';

  interface FieldError {
    field: FieldName;
    type: 'incomplete' | 'invalid';
  }

  interface ElementEvent {
    elementType: ElementType;
  }

  interface ChangeEvent extends ElementEvent {
    /** Every part of the element is valid. */
    complete: boolean;
    /** Nothing typed. */
    empty: boolean;
    /** The parts that are not valid, and why; never a value. */
    errors: FieldError[];
    /** The brand the number shows (`visa`, `mastercard`, `amex`, ...), null when unknown or not a number element. */
    cardBrand: string | null;
    /** The number's last four digits, once the element is complete. */
    cardLast4?: string;
  }

  interface ErrorEvent extends ElementEvent {
    error: { code: string; message: string };
  }

  interface ElementEvents {
    change: ChangeEvent;
    ready: ElementEvent;
    focus: ElementEvent;
    blur: ElementEvent;
    error: ErrorEvent;
  }

  type ElementEventName = keyof ElementEvents;

  interface Element<T extends ElementType = ElementType, P = string> {
    readonly type: T;
    /** Puts the element's iframe in `target` (a CSS selector or an element); resolves once it is ready. */
    mount(target: string | HTMLElement): Promise<void>;
    /** Removes the iframe (and the values typed in it). */
    unmount(): void;
    update(options: ElementOptions<P>): void;
    clear(): void;
    focus(): void;
    on<E extends ElementEventName>(event: E, handler: (event: ElementEvents[E]) => void): this;
    off<E extends ElementEventName>(event: E, handler: (event: ElementEvents[E]) => void): this;
  }

  type CardElement = Element<'card', CardPlaceholders>;
  type CardNumberElement = Element<'cardNumber'>;
  type CardVerificationCodeElement = Element<'cardVerificationCode'>;

  /** An opaque reference to the month or the year of an expiry element: never a value. */
  interface ExpiryPart<P extends 'month' | 'year'> {
    readonly part: P;
  }

  interface CardExpirationDateElement extends Element<'cardExpirationDate'> {
    month(): ExpiryPart<'month'>;
    year(): ExpiryPart<'year'>;
  }

  interface SplitCardData {
    number: CardNumberElement | CardElement;
    expiration_month: ExpiryPart<'month'>;
    expiration_year: ExpiryPart<'year'>;
    cvc?: CardVerificationCodeElement | CardElement;
  }

  interface CreateTokenRequest {
    type: 'card';
    data: CardElement | SplitCardData;
    metadata?: Record<string, string>;
    containers?: string[];
    /** ISO 8601 date-time. */
    expires_at?: string;
    id?: string;
  }

  /** The token the API answers (the card masked). */
  interface Token {
    id: string;
    tenant_id: string;
    type: 'card';
    mask?: { number?: string; expiration_month?: number; expiration_year?: number };
    enrichments?: { card_details?: { bin: string; brand?: string; funding?: string; issuer?: string } };
    metadata?: Record<string, string>;
    fingerprint?: string;
    containers: string[];
    expires_at?: string;
    created_by: string | null;
    created_at: string;
    [field: string]: unknown;
  }

  /** What `init`, `mount` and `tokens.create` reject with. */
  interface VaultElementsError extends Error {
    /** e.g. `frame_unavailable`, `timeout`, `invalid_key`, `key_of_another_application`, `incomplete_card`, `api_error`. */
    code: string;
    /** The HTTP status of the API's answer, when there was one. */
    status?: number;
    /** The API's problem+json answer, when there was one. */
    problem?: {
      status: number;
      title?: string;
      detail?: string;
      code?: string;
      errors?: Record<string, string[]>;
    };
    /** For `incomplete_card`: the parts that are not valid. */
    errors?: FieldError[];
  }

  interface Tokens {
    /** Tokenizes the card typed in the elements; rejects without any request when an element is not complete. */
    create(request: CreateTokenRequest): Promise<Token>;
  }

  interface Elements {
    createElement(type: 'card', options?: ElementOptions<CardPlaceholders>): CardElement;
    createElement(type: 'cardNumber', options?: ElementOptions): CardNumberElement;
    createElement(type: 'cardExpirationDate', options?: ElementOptions): CardExpirationDateElement;
    createElement(type: 'cardVerificationCode', options?: ElementOptions): CardVerificationCodeElement;
    readonly tokens: Tokens;
    /** Unmounts every element and removes the controller frame. */
    destroy(): void;
  }

  /** Checks the key with the vault (it must be of `applicationId`, or a session it created). */
  function init(key: string, options: InitOptions): Promise<Elements>;
  const version: string;
}

export = VaultElements;
export as namespace VaultElements;
