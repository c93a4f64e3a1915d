import { Module } from '@nestjs/common';
import { SessionKeyResolver } from './session-key.resolver';
import { SessionsController } from './sessions.controller';
import { SessionsRepository } from './sessions.repository';
import { SessionsService } from './sessions.service';

@Module({
  controllers: [SessionsController],
  providers: [SessionsRepository, SessionsService, SessionKeyResolver],
})
export class SessionsModule {}
