import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { RequirePermissions } from '../../common/auth/require-permissions.decorator';
import { NeverReplayed } from '../../common/context/never-replayed.decorator';
import { Origin, type RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { AuthorizeSessionDto, CreateSessionResponseDto } from './dto/session.dto';
import { SessionsService } from './sessions.service';
import { SessionsApi } from './dto/sessions.openapi';

@ApiTags('Sessions')
@Controller('sessions')
export class SessionsController {
  constructor(private readonly sessions: SessionsService) {}

  @Post()
  @RequirePermissions([], { keyKinds: ['public'] })
  @NeverReplayed()
  @SessionsApi.create()
  async create(@Origin() origin: RequestOrigin): Promise<CreateSessionResponseDto> {
    const { session_key, nonce, expires_at } = await this.sessions.create(origin);
    return { session_key, nonce, expires_at };
  }

  @Post('authorize')
  @HttpCode(204)
  @RequirePermissions([], { keyKinds: ['private'] })
  @SessionsApi.authorize()
  async authorize(@Origin() origin: RequestOrigin, @Body() body: AuthorizeSessionDto): Promise<void> {
    await this.sessions.authorize(origin, body);
  }
}
