import {
  ApiBody,
  ApiCreatedResponse,
  ApiExtension,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { ApiDocs } from '../../../common/api-docs.decorator';
import { CONTAINER_PATTERN } from '../../../common/auth/access-rule';
import { problemContent } from '../../../common/errors/problem-details.dto';
import { COMPONENT_SCHEMAS_EXTENSION } from '../../../common/openapi';
import { TOKEN_ID_PATTERN } from '../data/token-id';
import { MAX_LIST_IDS } from '../search/list-query';
import { TOKENIZED_VALUE, TokenCursorPageDto, TokenObjectDto, TokenPageDto } from './token.dto';
import { UpdateTokenDto } from './update-token.dto';

/**
 * The OpenAPI description of the tokens routes (TokensController), one decorator per route, so that the
 * controller reads as routing only. The prose is the API's reference (openapi.json, docs/tokens.md).
 */

const REVEAL_NOTE =
  'Each token is shown as the rule deciding it says: masked (flat permissions, `mask`), without data ' +
  '(`redact`), or with `data` in clear instead of `mask` (`reveal`; never a CVC; one `reveal` audit row per token).';
const ENUMERATION_NOTE =
  'Answers carry `fingerprint` only for tokens the caller may read (`token:read`, rules-aware). Keys that receive ' +
  'fingerprints may together tokenize at most `CARD_ENUMERATION_LIMIT` (default 10) distinct card numbers sharing ' +
  'their first 6 and last 4 digits per tenant in 24 hours; a request past it is a 429 with `code` ' +
  '`card_enumeration_suspected` and creates nothing. A bulk import that needs no fingerprints uses a key without token:read. ' +
  'A card token made by a caller that was not counted (a public key) is counted at its first read that would show ' +
  'its fingerprint, under the same limit; past it the read answers without `fingerprint`. Until then a ' +
  '`fingerprint` filter or search term does not match it.';
const PUBLIC_RATE_NOTE =
  'With a public key or a session (which counts for the public application that created it) each client address ' +
  'makes at most `PUBLIC_TOKENIZE_PER_MINUTE` (default 60) tokenize and create requests per minute per public ' +
  'application (429 `rate_limited` with `Retry-After`, nothing created). Private keys are not concerned.';
const PUBLIC_SIZE_NOTE =
  'A request with a public key or a session creates at most 10 tokens (400 `too_many_tokens` naming the first ' +
  'field past them, nothing created).';
const TOO_MANY_TOKENS = ApiResponse({
  status: 400,
  description:
    'Invalid input (`errors` names each bad field), more tokens than the request may create (`too_many_tokens`), ' +
    'or nothing to tokenize.',
  content: problemContent(),
});
const TOO_MANY_REQUESTS = ApiResponse({
  status: 429,
  description:
    'Too many requests for this API key this minute (RATE_LIMIT_PER_MINUTE), too many failed authentications ' +
    'from this client address (AUTH_FAILURES_PER_MINUTE), too many tokenizes from this address with this public ' +
    "application's keys (PUBLIC_TOKENIZE_PER_MINUTE), or too many card numbers of one group " +
    '(`card_enumeration_suspected`); see Retry-After.',
  content: problemContent(),
});
const FREE_FORM = {
  description:
    'A token request element `{type, data, ...}`, or any object or array whose leaves are strings (each becomes a ' +
    '`token` token) and token request elements, nested to any depth. At most 100 tokens, each `data` at most ' +
    '64 KiB as JSON.',
  schema: {
    oneOf: [
      { type: 'object', additionalProperties: true },
      { type: 'array', items: {} },
    ],
    example: {
      card: {
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
      },
      email: 'jane@example.com',
    },
  },
};

/** The request and answer of each route, by the controller's method name. */
export const TokensApi = {
  tokenize: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'tokenize',
        summary: 'Tokenize one value or a whole structure',
        description: `The response has the shape of the request. ${PUBLIC_SIZE_NOTE} ${PUBLIC_RATE_NOTE} ${ENUMERATION_NOTE}`,
      }),
      TOO_MANY_TOKENS,
      TOO_MANY_REQUESTS,
      ApiBody(FREE_FORM),
      ApiCreatedResponse({
        description:
          'The request shape with each value replaced by a token id or a token object; a single element gives the ' +
          'token object itself.',
        schema: {
          anyOf: [
            { $ref: getSchemaPath(TokenObjectDto) },
            { type: 'object', additionalProperties: { $ref: '#/components/schemas/TokenizedValue' } },
            { type: 'array', items: { $ref: '#/components/schemas/TokenizedValue' } },
          ],
        },
      }),
      ApiExtension(COMPONENT_SCHEMAS_EXTENSION, { TokenizedValue: TOKENIZED_VALUE }),
    ),

  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createToken',
        summary: 'Create one token',
        description: `${PUBLIC_RATE_NOTE} ${ENUMERATION_NOTE}`,
      }),
      TOO_MANY_REQUESTS,
      ApiBody({
        schema: {
          type: 'object',
          additionalProperties: true,
          required: ['type', 'data'],
          properties: {
            type: { type: 'string', enum: ['token', 'card', 'bank', 'network_token'] },
            id: {
              type: 'string',
              pattern: TOKEN_ID_PATTERN.source,
              description:
                'Optional: 1 to 400 letters, digits, `_` and `-`, unique in the tenant (409 if taken). Default: a uuid.',
            },
            containers: {
              type: 'array',
              items: { type: 'string', pattern: CONTAINER_PATTERN.source },
              description: '`/` (the root) or paths such as `/pci/high/`.',
            },
            data: {
              description:
                'A string or any JSON for `token`; `{number, expiration_month, expiration_year, cvc?}` for `card`; `{routing_number, account_number}` for `bank`. At most 64 KiB as JSON (UTF-8).',
            },
          },
          example: {
            type: 'card',
            data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
          },
        },
      }),
      ApiCreatedResponse({
        description: 'The token object, with `mask` for cards and banks.',
        type: TokenObjectDto,
      }),
    ),

  list: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listTokens',
        summary: 'List tokens',
        description: `Also filters by \`metadata.<name>=<value>\`. Filters combine: a token must match all of them. ${REVEAL_NOTE}`,
      }),
      ApiOkResponse({ type: TokenPageDto }),
      ApiQuery({
        name: 'id',
        required: false,
        description: `Only these tokens (repeat \`id=\` for several, at most ${MAX_LIST_IDS}); those the key may not read are left out.`,
        schema: {
          type: 'array',
          maxItems: MAX_LIST_IDS,
          items: { type: 'string', pattern: TOKEN_ID_PATTERN.source },
        },
      }),
      ApiQuery({ name: 'type', required: false }),
      ApiQuery({ name: 'container', required: false }),
      ApiQuery({ name: 'fingerprint', required: false }),
      ApiQuery({ name: 'page', required: false, schema: { type: 'integer', minimum: 1 } }),
      ApiQuery({ name: 'size', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 } }),
    ),

  search: () =>
    ApiDocs(
      ApiOperation({ operationId: 'searchTokens', summary: 'Search tokens', description: REVEAL_NOTE }),
      ApiOkResponse({ description: 'An offset page of token objects.', type: TokenPageDto }),
    ),

  listV2: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listTokensV2',
        summary: 'List tokens (cursor pagination)',
        description:
          'Newest first; pass `pagination.next` as `start` for the next page. `metadata` is a JSON object. ' +
          REVEAL_NOTE,
      }),
      ApiQuery({ name: 'type', required: false }),
      ApiQuery({ name: 'container', required: false }),
      ApiQuery({ name: 'fingerprint', required: false }),
      ApiQuery({
        name: 'metadata',
        required: false,
        description: 'A JSON object of string values, e.g. {"k":"v"}',
      }),
      ApiQuery({ name: 'start', required: false }),
      ApiQuery({ name: 'size', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 } }),
      ApiOkResponse({ type: TokenCursorPageDto }),
    ),

  searchV2: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'searchTokensV2',
        summary: 'Search tokens (cursor pagination)',
        description: REVEAL_NOTE,
      }),
      ApiOkResponse({ type: TokenCursorPageDto }),
    ),

  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getToken', summary: 'Get a token', description: REVEAL_NOTE }),
      ApiOkResponse({ type: TokenObjectDto }),
    ),

  update: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'updateToken',
        summary: 'Update metadata, search indexes, fingerprint expression or expiry',
        description:
          'Metadata is merged (null removes a key); the rest is replaced. Changing `fingerprint_expression` or ' +
          '`search_indexes` evaluates them over the stored data, so it needs the rule deciding token:read for the ' +
          'token to carry `reveal` (403 otherwise). Setting `expires_at`, or moving it earlier, needs token:delete. ' +
          'The answer is masked, even through a reveal rule.',
      }),
      ApiOkResponse({ type: TokenObjectDto }),
      ApiBody({ type: UpdateTokenDto }),
    ),

  delete: () => ApiOperation({ operationId: 'deleteToken', summary: 'Delete a token and destroy its data' }),
};
