import { ApiDocs } from '../../../common/api-docs.decorator';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOperation,
} from '@nestjs/swagger';
import { problemContent } from '../../../common/errors/problem-details.dto';
import { CreateSessionResponseDto } from './session.dto';

/**
 * The OpenAPI description of the sessions routes, one decorator per route, so that the controller
 * reads as routing only.
 */

/** The request and answer of each route, by the controller's method name. */
export const SessionsApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createSession',
        summary: 'Create a session',
        description:
          'Called with a public application key, without a body. The session has no access until a private ' +
          'application authorizes it with the nonce. It expires 3 minutes after creation. Every call creates ' +
          'a new session: BT-IDEMPOTENCY-KEY is ignored here, so that no holder of a shared public key is ' +
          "ever sent another's session key.",
      }),
      ApiCreatedResponse({ type: CreateSessionResponseDto }),
    ),
  authorize: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'authorizeSession',
        summary: 'Authorize a session',
        description:
          'Called with a private application key. Grants the session permissions and/or rules, never more than ' +
          'the private application holds. The nonce works once. At every use, on every token, the session may ' +
          'do only what its own grants and the private application allow then: a token the application may ' +
          'not read, search, use, update or delete (its own rules deciding, over every container of the ' +
          'token) is refused to the session as to the application, left out of its lists and searches, and ' +
          'never detokenized for it by a proxy.',
      }),
      ApiNoContentResponse({ description: 'The session is authorized.' }),
      ApiBadRequestResponse({
        description: 'Unknown, expired or used nonce; nothing granted; a grant the caller does not hold.',
        content: problemContent(),
      }),
    ),
};
