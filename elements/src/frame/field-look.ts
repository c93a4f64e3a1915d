/** How a field element looks: its parts, their labels and placeholders, the default style, CSSOM helpers. */
import type { ElementType, FieldName } from '../shared/protocol';
import type { StyleDeclaration } from '../shared/style';

export const PARTS: Record<ElementType, FieldName[]> = {
  card: ['number', 'expiration_date', 'cvc'],
  cardNumber: ['number'],
  cardExpirationDate: ['expiration_date'],
  cardVerificationCode: ['cvc'],
};

export interface PartSpec {
  autocomplete: string;
  label: string;
  placeholder: string;
  /** flex of the input in the `card` element's single row. */
  flex: string;
}

export const SPECS: Record<FieldName, PartSpec> = {
  number: {
    autocomplete: 'cc-number',
    label: 'Card number',
    placeholder: '1234 1234 1234 1234',
    flex: '1 1 auto',
  },
  expiration_date: {
    autocomplete: 'cc-exp',
    label: 'Expiration date (MM / YY)',
    placeholder: 'MM / YY',
    flex: '0 0 5.5em',
  },
  cvc: { autocomplete: 'cc-csc', label: 'Security code (CVC)', placeholder: 'CVC', flex: '0 0 4em' },
};

/** The frame's own look, under the page's style. */
export const DEFAULT_STYLE: StyleDeclaration = {
  color: '#1a1a1a',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  fontSize: '16px',
  lineHeight: '1.5',
  padding: '6px 2px',
};
export const DEFAULT_PLACEHOLDER_COLOR = '#6b6b6b';

/** CSSOM only: the frame's policy has no style-src. */
export function setStyles(element: HTMLElement, declarations: Record<string, string>): void {
  for (const [property, value] of Object.entries(declarations)) element.style.setProperty(property, value);
}

export const VISUALLY_HIDDEN = {
  position: 'absolute',
  width: '1px',
  height: '1px',
  padding: '0',
  margin: '-1px',
  overflow: 'hidden',
  clip: 'rect(0 0 0 0)',
  'clip-path': 'inset(50%)',
  'white-space': 'nowrap',
  border: '0',
};

/** A constructed stylesheet for `::placeholder` colours (CSSOM, not subject to the page's markup). */
export function placeholderSheet(): CSSStyleSheet | null {
  try {
    const sheet = new CSSStyleSheet();
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    return sheet;
  } catch {
    return null;
  }
}

export function placeholderRule(sheet: CSSStyleSheet | null, id: string): CSSStyleRule | null {
  if (!sheet) return null;
  try {
    const index = sheet.insertRule(`#${id}::placeholder {}`, sheet.cssRules.length);
    return sheet.cssRules[index] as CSSStyleRule;
  } catch {
    return null;
  }
}
