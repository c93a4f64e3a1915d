/**
 * The styles a page may give the fields inside the frames: a short list of text properties, by state.
 * The page checks them when an element is created or updated (so that a mistake throws at once); the
 * frame checks them again and applies only what passes, through the CSSOM (the frame's Content Security
 * Policy has no style-src: no style attribute, no <style>).
 */

export const STYLE_STATES = ['base', 'empty', 'complete', 'focus', 'invalid'] as const;
export type StyleState = (typeof STYLE_STATES)[number];

/** The allowed properties (camelCase, as in the page's options) and their CSS names. */
export const STYLE_PROPERTIES: Record<string, string> = {
  color: 'color',
  backgroundColor: 'background-color',
  caretColor: 'caret-color',
  fontFamily: 'font-family',
  fontSize: 'font-size',
  fontStyle: 'font-style',
  fontVariant: 'font-variant',
  fontWeight: 'font-weight',
  letterSpacing: 'letter-spacing',
  lineHeight: 'line-height',
  textAlign: 'text-align',
  textTransform: 'text-transform',
  textShadow: 'text-shadow',
  padding: 'padding',
  paddingTop: 'padding-top',
  paddingRight: 'padding-right',
  paddingBottom: 'padding-bottom',
  paddingLeft: 'padding-left',
};

/** Placeholder text may only be coloured. */
export const PLACEHOLDER_KEY = '::placeholder';
const PLACEHOLDER_PROPERTIES = ['color'];

export type StyleDeclaration = Record<string, string>;
export type StateStyle = StyleDeclaration & { [PLACEHOLDER_KEY]?: StyleDeclaration };
export type Style = Partial<Record<StyleState, StateStyle>>;

/**
 * A value is a short string of characters that cannot open a resource, a function, a block, a comment or
 * an escape: no `url(`, `src(`, `image(`, `image-set(`, `expression(`, `var(`, `attr(`, `\`, `;`, braces,
 * angle brackets, `@`. Quotes are fine (font families).
 */
const FORBIDDEN_VALUE =
  /url\s*\(|src\s*\(|image|cross-fade|element\s*\(|expression|var\s*\(|attr\s*\(|env\s*\(|javascript:|[\\;{}<>@`]|\/\*/i;
const MAX_VALUE_LENGTH = 120;

export function styleValueProblem(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) return null;
  if (typeof value !== 'string') return 'must be a string';
  if (value.length > MAX_VALUE_LENGTH) return `must be at most ${MAX_VALUE_LENGTH} characters`;
  if (FORBIDDEN_VALUE.test(value)) return 'contains a forbidden construct (url(), var(), escapes, ...)';
  return null;
}

/**
 * The style kept of `input`: only known states and properties with acceptable values. Problems are
 * collected (the page throws with them; the frame drops what does not pass).
 */
export function sanitizeStyle(input: unknown, problems: string[] = []): Style {
  const style: Style = {};
  if (input === undefined || input === null) return style;
  if (typeof input !== 'object' || Array.isArray(input)) {
    problems.push('style must be an object of states (base, empty, complete, focus, invalid)');
    return style;
  }
  for (const [state, declarations] of Object.entries(input as Record<string, unknown>)) {
    if (!(STYLE_STATES as readonly string[]).includes(state)) {
      problems.push(`style.${state} is not a state (${STYLE_STATES.join(', ')})`);
      continue;
    }
    if (typeof declarations !== 'object' || declarations === null || Array.isArray(declarations)) {
      problems.push(`style.${state} must be an object`);
      continue;
    }
    const kept: StateStyle = {};
    for (const [property, value] of Object.entries(declarations as Record<string, unknown>)) {
      if (property === PLACEHOLDER_KEY) {
        const placeholder = sanitizeDeclarations(
          value,
          PLACEHOLDER_PROPERTIES,
          `style.${state}.${property}`,
          problems,
        );
        if (placeholder) kept[PLACEHOLDER_KEY] = placeholder;
        continue;
      }
      if (!Object.prototype.hasOwnProperty.call(STYLE_PROPERTIES, property)) {
        problems.push(`style.${state}.${property} is not an allowed property`);
        continue;
      }
      const problem = styleValueProblem(value);
      if (problem) problems.push(`style.${state}.${property} ${problem}`);
      else kept[property] = String(value);
    }
    style[state as StyleState] = kept;
  }
  return style;
}

function sanitizeDeclarations(
  value: unknown,
  allowed: string[],
  path: string,
  problems: string[],
): StyleDeclaration | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${path} must be an object`);
    return undefined;
  }
  const kept: StyleDeclaration = {};
  for (const [property, v] of Object.entries(value as Record<string, unknown>)) {
    if (!allowed.includes(property)) {
      problems.push(`${path}.${property} is not an allowed property`);
      continue;
    }
    const problem = styleValueProblem(v);
    if (problem) problems.push(`${path}.${property} ${problem}`);
    else kept[property] = String(v);
  }
  return kept;
}

/** Placeholder texts: short plain strings, without control characters. */
export function sanitizePlaceholder(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  let text = '';
  for (const c of value) if (c >= ' ' && c !== '\u007f') text += c;
  return text.slice(0, 60);
}
