import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { NeverReplayed } from '../../common/context/never-replayed.decorator';
import { problemContent } from '../../common/errors/problem-details.dto';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { AuthorizeSessionDto, CreateSessionResponseDto } from './dto/session.dto';
import { SessionsService } from './sessions.service';

@ApiTags('Sessions')
@Controller('sessions')
export class SessionsController {
  constructor(private readonly sessions: SessionsService) {}

  @Post()
  @RequirePermissions([], { keyKinds: ['public'] })
  @NeverReplayed()
  @ApiOperation({
    operationId: 'createSession',
    summary: 'Create a session',
    description:
      'Called with a public application key, without a body. The session has no access until a private ' +
      'application authorizes it with the nonce. It expires 3 minutes after creation. Every call creates ' +
      'a new session: BT-IDEMPOTENCY-KEY is ignored here, so that no holder of a shared public key is ' +
      "ever sent another's session key.",
  })
  @ApiCreatedResponse({ type: CreateSessionResponseDto })
  async create(@Origin() origin: RequestOrigin): Promise<CreateSessionResponseDto> {
    const { session_key, nonce, expires_at } = await this.sessions.create(origin);
    return { session_key, nonce, expires_at };
  }

  @Post('authorize')
  @HttpCode(204)
  @RequirePermissions([], { keyKinds: ['private'] })
  @ApiOperation({
    operationId: 'authorizeSession',
    summary: 'Authorize a session',
    description:
      'Called with a private application key. Grants the session permissions and/or rules, never more than ' +
      'the private application holds. The nonce works once. At every use, on every token, the session may ' +
      'do only what its own grants and the private application allow then: a token the application may ' +
      'not read, search, use, update or delete (its own rules deciding, over every container of the ' +
      'token) is refused to the session as to the application, left out of its lists and searches, and ' +
      'never detokenized for it by a proxy.',
  })
  @ApiNoContentResponse({ description: 'The session is authorized.' })
  @ApiBadRequestResponse({
    description: 'Unknown, expired or used nonce; nothing granted; a grant the caller does not hold.',
    content: problemContent(),
  })
  async authorize(@Origin() origin: RequestOrigin, @Body() body: AuthorizeSessionDto): Promise<void> {
    await this.sessions.authorize(origin, body);
  }
}
