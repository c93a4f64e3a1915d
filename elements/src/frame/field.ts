/**
 * A field element's frame: the inputs where the buyer types the card, their formatting and checks, and
 * the events the page receives (states, never values). The values leave this frame only over the
 * BroadcastChannel of its `init` group, to the controller frame (same origin as this one).
 */
import {
  brandOf,
  cvcSizes,
  cvcState,
  digitsOf,
  expiryState,
  formatExpiry,
  formatNumber,
  maxNumberLength,
  numberState,
  parseExpiry,
  schemeOf,
} from './card';
import type { PartState } from './card';
import type { FrameContext } from './context';
import type { ChangeState, CollectedValues, ElementType, Envelope, FieldName } from '../shared/protocol';
import { PLACEHOLDER_KEY, STYLE_PROPERTIES, sanitizePlaceholder, sanitizeStyle } from '../shared/style';
import type { Style, StyleDeclaration } from '../shared/style';
import {
  DEFAULT_PLACEHOLDER_COLOR,
  DEFAULT_STYLE,
  PARTS,
  placeholderRule,
  placeholderSheet,
  setStyles,
  SPECS,
  VISUALLY_HIDDEN,
} from './field-look';

interface Part {
  name: FieldName;
  input: HTMLInputElement;
  state: PartState;
  /** The buyer left the input once with something in it: an incomplete part then shows as invalid. */
  touched: boolean;
  placeholderRule: CSSStyleRule | null;
}

export function runField(ctx: FrameContext, type: ElementType): void {
  let style: Style = {};
  let rendered = false;
  let lastChange = '';
  /** For a CVC alone: the CVC sizes the number element of the same group says its brand takes. */
  let groupSizes: number[] = [3, 4];
  const parts: Part[] = [];
  const root = document.createElement('div');
  const sheet = placeholderSheet();

  const part = (name: FieldName): Part | undefined => parts.find((p) => p.name === name);
  const numberDigits = (): string => digitsOf(part('number')?.input.value ?? '');
  /** The CVC sizes of the number typed here (3 for a complete number of no known brand, as the API wants). */
  const numberCvcSizes = (): number[] => {
    const digits = numberDigits();
    const b = brandOf(digits);
    if (!b && numberState(digits).valid) return [3];
    return cvcSizes(b);
  };
  const cvcSizesNow = (): number[] => (part('number') ? numberCvcSizes() : groupSizes);

  function evaluate(): void {
    for (const p of parts) {
      if (p.name === 'number') p.state = numberState(numberDigits());
      else if (p.name === 'expiration_date') p.state = expiryState(parseExpiry(p.input.value));
      else p.state = cvcState(digitsOf(p.input.value), cvcSizesNow());
      const shown = !p.state.valid && (p.state.reason === 'invalid' || (p.touched && p.input.value !== ''));
      p.input.setAttribute('aria-invalid', shown ? 'true' : 'false');
    }
    applyStyle();
  }

  function changeState(): ChangeState {
    const errors = parts
      .filter((p) => !p.state.valid)
      .map((p) => ({ field: p.name, type: p.state.valid ? 'invalid' : p.state.reason }) as const);
    const complete = errors.length === 0;
    const state: ChangeState = {
      complete,
      empty: parts.every((p) => p.input.value === ''),
      errors,
      cardBrand: part('number') ? schemeOf(brandOf(numberDigits())?.type) : null,
    };
    if (complete && part('number')) state.cardLast4 = numberDigits().slice(-4);
    return state;
  }

  function emitChange(): void {
    const state = changeState();
    const serialized = JSON.stringify(state);
    if (serialized === lastChange) return;
    lastChange = serialized;
    ctx.post('change', { state });
  }

  function applyStyle(): void {
    const complete = parts.every((p) => p.state.valid);
    const empty = parts.every((p) => p.input.value === '');
    for (const p of parts) {
      const focused = document.activeElement === p.input;
      const invalid = p.input.getAttribute('aria-invalid') === 'true';
      const layers = [
        DEFAULT_STYLE,
        style.base,
        empty ? style.empty : undefined,
        complete ? style.complete : undefined,
        focused ? style.focus : undefined,
        invalid ? style.invalid : undefined,
      ];
      const merged: Record<string, string> = {};
      let placeholderColor = DEFAULT_PLACEHOLDER_COLOR;
      for (const layer of layers) {
        if (!layer) continue;
        for (const [key, value] of Object.entries(layer)) {
          if (key === PLACEHOLDER_KEY) {
            const color = (value as unknown as StyleDeclaration).color;
            if (color) placeholderColor = color;
          } else merged[key] = value;
        }
      }
      for (const [key, css] of Object.entries(STYLE_PROPERTIES)) {
        p.input.style.setProperty(css, merged[key] ?? '');
      }
      if (p.placeholderRule) p.placeholderRule.style.setProperty('color', placeholderColor);
    }
    postSize();
  }

  let lastHeight = 0;
  function postSize(): void {
    if (!rendered) return;
    const height = Math.ceil(root.getBoundingClientRect().height);
    if (height === lastHeight) return;
    lastHeight = height;
    ctx.post('resize', { height });
  }

  function onInput(p: Part, event: Event): void {
    const input = p.input;
    const inputType = (event as InputEvent).inputType ?? '';
    const atEnd = input.selectionStart === input.value.length;
    if (p.name === 'number') {
      const digitsBefore = digitsOf(input.value.slice(0, input.selectionStart ?? input.value.length)).length;
      let digits = digitsOf(input.value).slice(0, 19);
      digits = digits.slice(0, maxNumberLength(digits));
      const formatted = formatNumber(digits);
      input.value = formatted;
      if (document.activeElement === input) {
        let position = 0;
        for (let seen = 0; position < formatted.length && seen < digitsBefore; position++) {
          if (formatted[position] !== ' ') seen++;
        }
        input.setSelectionRange(position, position);
      }
    } else if (p.name === 'expiration_date') {
      const formatted = formatExpiry(parseExpiry(input.value), inputType.startsWith('delete'));
      input.value = formatted;
      if (atEnd && document.activeElement === input)
        input.setSelectionRange(formatted.length, formatted.length);
    } else {
      input.value = digitsOf(input.value).slice(0, Math.max(...cvcSizesNow()));
    }
    evaluate();
    emitChange();
    if (p.name === 'number') broadcastBrand();
    // In the `card` element, a part done moves the buyer on to the next one.
    if (p.state.valid && atEnd && inputType.startsWith('insert')) {
      const next = parts[parts.indexOf(p) + 1];
      if (next && next.input.value === '') next.input.focus();
    }
  }

  function render(): void {
    setStyles(document.documentElement, { margin: '0', padding: '0', background: 'transparent' });
    setStyles(document.body, { margin: '0', padding: '0', background: 'transparent', overflow: 'hidden' });
    setStyles(root, { display: 'flex', 'align-items': 'center', gap: '0.75em', width: '100%' });
    for (const name of PARTS[type]) {
      const spec = SPECS[name];
      const id = `vault-${name.replace('_', '-')}`;
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = spec.label;
      setStyles(label, VISUALLY_HIDDEN);
      const input = document.createElement('input');
      input.id = id;
      input.name = name;
      input.type = 'text';
      input.inputMode = 'numeric';
      input.setAttribute('autocomplete', spec.autocomplete);
      input.setAttribute('autocorrect', 'off');
      input.setAttribute('autocapitalize', 'off');
      input.spellcheck = false;
      input.placeholder = spec.placeholder;
      input.setAttribute('aria-invalid', 'false');
      setStyles(input, {
        flex: type === 'card' ? spec.flex : '1 1 auto',
        'min-width': '0',
        width: '100%',
        margin: '0',
        border: '0',
        outline: 'none',
        background: 'transparent',
        'box-sizing': 'border-box',
        appearance: 'none',
      });
      const p: Part = {
        name,
        input,
        state: { valid: false, reason: 'incomplete' },
        touched: false,
        placeholderRule: placeholderRule(sheet, id),
      };
      parts.push(p);
      input.addEventListener('input', (event) => onInput(p, event));
      input.addEventListener('focus', () => applyStyle());
      input.addEventListener('blur', () => {
        if (input.value !== '') p.touched = true;
        evaluate();
        emitChange();
      });
      root.append(label, input);
    }
    // One focus and one blur for the whole element, whichever of its inputs the buyer moves between.
    root.addEventListener('focusin', (event) => {
      if (!root.contains(event.relatedTarget as Node | null)) ctx.post('focus');
    });
    root.addEventListener('focusout', (event) => {
      if (!root.contains(event.relatedTarget as Node | null)) ctx.post('blur');
    });
    document.body.append(root);
    rendered = true;
    evaluate();
    if (typeof ResizeObserver === 'function') new ResizeObserver(() => postSize()).observe(root);
  }

  function setPlaceholders(placeholder: unknown): void {
    for (const p of parts) {
      const value =
        typeof placeholder === 'object' && placeholder !== null
          ? sanitizePlaceholder((placeholder as Record<string, unknown>)[placeholderKey(p.name)])
          : parts.length === 1
            ? sanitizePlaceholder(placeholder)
            : undefined;
      if (value !== undefined) p.input.placeholder = value;
    }
  }

  function clear(): void {
    for (const p of parts) {
      p.input.value = '';
      p.touched = false;
    }
    evaluate();
    emitChange();
    broadcastBrand();
  }

  function values(): CollectedValues {
    const collected: CollectedValues = {};
    for (const p of parts) {
      if (p.name === 'number') collected.number = numberDigits();
      else if (p.name === 'cvc') collected.cvc = digitsOf(p.input.value);
      else {
        const expiry = parseExpiry(p.input.value);
        collected.expiration_month = Number(expiry.month);
        collected.expiration_year = 2000 + Number(expiry.year);
      }
    }
    return collected;
  }

  function broadcastBrand(): void {
    if (type === 'cardNumber') ctx.group.postMessage({ type: 'cvc-sizes', sizes: numberCvcSizes() });
  }

  ctx.onMessage((message: Envelope) => {
    switch (message.type) {
      case 'configure':
        if (rendered) return;
        style = sanitizeStyle(message.style);
        render();
        setPlaceholders(message.placeholder);
        evaluate();
        ctx.post('ready', { height: Math.ceil(root.getBoundingClientRect().height) });
        lastHeight = Math.ceil(root.getBoundingClientRect().height);
        emitChange();
        broadcastBrand();
        return;
      case 'update':
        if (!rendered) return;
        if (message.style !== undefined) style = sanitizeStyle(message.style);
        if (message.placeholder !== undefined) setPlaceholders(message.placeholder);
        applyStyle();
        return;
      case 'clear':
        if (rendered) clear();
        return;
      case 'focus':
        if (rendered) (parts.find((p) => !p.state.valid) ?? parts[0]).input.focus();
        return;
      case 'blur':
        if (rendered && root.contains(document.activeElement)) (document.activeElement as HTMLElement).blur();
        return;
    }
  });

  ctx.group.addEventListener('message', (event: MessageEvent) => {
    const data = event.data as { type?: unknown; requestId?: unknown; channels?: unknown; sizes?: unknown };
    if (data.type === 'collect' && Array.isArray(data.channels) && data.channels.includes(ctx.hash.channel)) {
      if (!rendered) return;
      evaluate();
      ctx.group.postMessage({
        type: 'values',
        requestId: data.requestId,
        channel: ctx.hash.channel,
        kind: type,
        complete: parts.every((p) => p.state.valid),
        values: values(),
      });
    } else if (data.type === 'cvc-sizes' && type === 'cardVerificationCode') {
      const sizes = Array.isArray(data.sizes) ? data.sizes.filter((n) => n === 3 || n === 4) : [];
      groupSizes = sizes.length > 0 ? (sizes as number[]) : [3, 4];
      if (rendered) {
        evaluate();
        emitChange();
      }
    } else if (data.type === 'cvc-sizes?' && type === 'cardNumber' && rendered) {
      broadcastBrand();
    }
  });

  ctx.post('hello');
  if (type === 'cardVerificationCode') ctx.group.postMessage({ type: 'cvc-sizes?' });
}

const placeholderKey = (name: FieldName): string =>
  name === 'expiration_date' ? 'expirationDate' : name === 'cvc' ? 'cvc' : 'number';
