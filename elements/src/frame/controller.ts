/**
 * The invisible controller frame of one `init`: it holds the key, checks that it belongs to the
 * application the frame was opened for, and makes the API calls (same origin as the vault: no CORS). For
 * a tokenize request it collects the values from the element frames of its group (BroadcastChannel, same
 * origin only), checks them, calls POST /tokens and posts back only the API's answer.
 */
import { cardProblems } from './card';
import type { FrameContext } from './context';
import { TOKEN_REQUEST_FIELDS, isPlaceholder, randomId } from '../shared/protocol';
import type { CollectedValues, ElementType, Envelope, Placeholder } from '../shared/protocol';

const COLLECT_TIMEOUT_MS = 3000;

interface Collected {
  kind: ElementType;
  complete: boolean;
  values: CollectedValues;
}

/** A failure the page receives: a code and a message, never a value. */
class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const apiUrl = (path: string): string => new URL(`../../${path}`, location.href).toString();

export function runController(ctx: FrameContext): void {
  let key: string | null = null;
  let initializing = false;
  const waiting = new Map<string, (collected: Collected & { channel: string }) => void>();

  ctx.group.addEventListener('message', (event: MessageEvent) => {
    const data = event.data as Partial<Collected> & {
      type?: unknown;
      requestId?: unknown;
      channel?: unknown;
    };
    if (data.type !== 'values' || typeof data.requestId !== 'string' || typeof data.channel !== 'string')
      return;
    waiting.get(`${data.requestId}:${data.channel}`)?.({
      channel: data.channel,
      kind: data.kind as ElementType,
      complete: data.complete === true,
      values: data.values ?? {},
    });
  });

  ctx.onMessage((message: Envelope) => {
    if (message.type === 'init') void initialize(message.key);
    else if (message.type === 'tokenize' && typeof message.id === 'string')
      void tokenize(message.id, message.request);
  });
  ctx.post('hello');

  async function initialize(candidate: unknown): Promise<void> {
    if (key !== null || initializing) return;
    initializing = true;
    try {
      if (typeof candidate !== 'string' || candidate.length === 0 || candidate.length > 500) {
        throw new Refusal('invalid_key', 'the key must be a non-empty string');
      }
      let response: Response;
      try {
        response = await fetch(apiUrl('applications/key'), {
          headers: { 'BT-API-KEY': candidate },
          cache: 'no-store',
          credentials: 'omit',
        });
      } catch {
        throw new Refusal('vault_unreachable', 'the vault could not be reached');
      }
      if (response.status === 401) {
        throw new Refusal('invalid_key', 'the key is not valid (unknown, expired or revoked)');
      }
      if (response.status === 403) {
        throw new Refusal('invalid_key', 'the key may not be used here (is the session authorized?)');
      }
      if (!response.ok) throw new Refusal('invalid_key', `the vault answered ${response.status} for the key`);
      const application = (await response.json()) as { id?: unknown; type?: unknown };
      if (application.id !== ctx.applicationId) {
        throw new Refusal(
          'key_of_another_application',
          `the key does not belong to application ${ctx.applicationId} (nor to a session it created)`,
        );
      }
      if (application.type !== 'public') {
        throw new Refusal('invalid_key', 'only a public key or a session key may be used in a browser');
      }
      key = candidate;
      ctx.post('initialized');
    } catch (error) {
      const refusal =
        error instanceof Refusal ? error : new Refusal('init_failed', 'the key could not be checked');
      ctx.post('init-error', { error: { code: refusal.code, message: refusal.message } });
    } finally {
      initializing = false;
    }
  }

  async function tokenize(id: string, request: unknown): Promise<void> {
    try {
      if (key === null) throw new Refusal('not_initialized', 'init has not completed');
      const { body, placeholders } = checkRequest(request);
      const collected = await collect(placeholders.map((p) => p.$element));
      const card = assemble(body.data, collected);
      const problems = cardProblems(card);
      if (problems.length > 0) {
        throw new Refusal('invalid_card', `the card is not complete or not valid (${problems.join(', ')})`);
      }
      let response: Response;
      try {
        response = await fetch(apiUrl('tokens'), {
          method: 'POST',
          headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json' },
          body: JSON.stringify({ ...body, data: card }),
          cache: 'no-store',
          credentials: 'omit',
        });
      } catch {
        throw new Refusal('vault_unreachable', 'the vault could not be reached');
      }
      const text = await response.text();
      ctx.post('tokenize-result', { id, status: response.status, body: parseAnswer(text, card.number) });
    } catch (error) {
      const refusal =
        error instanceof Refusal ? error : new Refusal('tokenize_failed', 'the card could not be sent');
      ctx.post('tokenize-result', { id, error: { code: refusal.code, message: refusal.message } });
    }
  }

  /** The values of the named element frames of this group, each within COLLECT_TIMEOUT_MS. */
  function collect(channels: string[]): Promise<Map<string, Collected>> {
    const requestId = randomId();
    const unique = [...new Set(channels)];
    return new Promise((resolve, reject) => {
      const found = new Map<string, Collected>();
      const done = (): void => {
        clearTimeout(timer);
        for (const channel of unique) waiting.delete(`${requestId}:${channel}`);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Refusal('element_not_mounted', 'an element of the request is not mounted'));
      }, COLLECT_TIMEOUT_MS);
      for (const channel of unique) {
        waiting.set(`${requestId}:${channel}`, (answer) => {
          found.set(answer.channel, answer);
          if (found.size === unique.length) {
            done();
            resolve(found);
          }
        });
      }
      ctx.group.postMessage({ type: 'collect', requestId, channels: unique });
    });
  }
}

interface CheckedRequest {
  body: Record<string, unknown> & { data: unknown };
  placeholders: Placeholder[];
}

/**
 * The page's request, as far as the controller lets it go: a card token, its data only from elements
 * (placeholders), and a few plain fields; placeholders anywhere else are refused (a value must never land
 * in metadata, which the API answers in clear).
 */
function checkRequest(request: unknown): CheckedRequest {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw new Refusal('invalid_request', 'the request must be an object');
  }
  const fields = request as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    if (!(TOKEN_REQUEST_FIELDS as readonly string[]).includes(field)) {
      throw new Refusal('invalid_request', `${field} may not be set from elements`);
    }
  }
  if (fields.type !== 'card') throw new Refusal('invalid_request', "type must be 'card'");
  for (const [field, value] of Object.entries(fields)) {
    if (field !== 'data' && containsPlaceholder(value)) {
      throw new Refusal('invalid_request', `${field} may not hold an element`);
    }
  }
  const placeholders: Placeholder[] = [];
  const data = fields.data;
  if (isPlaceholder(data)) {
    if (data.part !== undefined) throw new Refusal('invalid_request', 'data must be a card element');
    placeholders.push(data);
  } else if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
    const parts = data as Record<string, unknown>;
    const expected: Record<string, 'month' | 'year' | undefined> = {
      number: undefined,
      expiration_month: 'month',
      expiration_year: 'year',
      cvc: undefined,
    };
    for (const [name, value] of Object.entries(parts)) {
      if (!(name in expected)) throw new Refusal('invalid_request', `data.${name} is not a card field`);
      if (!isPlaceholder(value) || value.part !== expected[name]) {
        throw new Refusal('invalid_request', `data.${name} must come from an element`);
      }
      placeholders.push(value);
    }
    for (const required of ['number', 'expiration_month', 'expiration_year']) {
      if (!(required in parts)) throw new Refusal('invalid_request', `data.${required} is required`);
    }
  } else {
    throw new Refusal('invalid_request', 'data must be a card element or an object of elements');
  }
  return { body: { ...fields, data }, placeholders };
}

function containsPlaceholder(value: unknown, depth = 0): boolean {
  if (depth > 10) return true;
  if (isPlaceholder(value)) return true;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some((v) => containsPlaceholder(v, depth + 1));
}

interface Card {
  number?: string;
  expiration_month?: number;
  expiration_year?: number;
  cvc?: string;
}

/** The card from the collected values: each placeholder replaced by its element's value. */
function assemble(data: unknown, collected: Map<string, Collected>): Card {
  const from = (placeholder: Placeholder, kinds: ElementType[]): Collected => {
    const element = collected.get(placeholder.$element);
    if (!element || !kinds.includes(element.kind)) {
      throw new Refusal('invalid_request', 'an element of the request is not of the expected type');
    }
    if (!element.complete) throw new Refusal('invalid_card', 'the card is not complete or not valid');
    return element;
  };
  if (isPlaceholder(data)) {
    const { number, expiration_month, expiration_year, cvc } = from(data, ['card']).values;
    return { number, expiration_month, expiration_year, cvc };
  }
  const parts = data as Record<string, Placeholder>;
  const card: Card = {
    number: from(parts.number, ['card', 'cardNumber']).values.number,
    expiration_month: from(parts.expiration_month, ['card', 'cardExpirationDate']).values.expiration_month,
    expiration_year: from(parts.expiration_year, ['card', 'cardExpirationDate']).values.expiration_year,
  };
  if (parts.cvc) card.cvc = from(parts.cvc, ['card', 'cardVerificationCode']).values.cvc;
  return card;
}

/** The API's JSON answer, with the card number masked should it ever appear in it. */
function parseAnswer(text: string, number: string | undefined): unknown {
  let safe = text;
  if (number && number.length >= 12)
    safe = safe.split(number).join(`${'X'.repeat(number.length - 4)}${number.slice(-4)}`);
  try {
    return JSON.parse(safe) as unknown;
  } catch {
    return { detail: 'the vault did not answer JSON' };
  }
}
