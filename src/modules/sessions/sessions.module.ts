import { Module } from '@nestjs/common';
import { SessionKeyResolver } from './session-key.resolver';
import { SessionsController } from './sessions.controller';
import { SessionsService } from './sessions.service';

@Module({
  controllers: [SessionsController],
  providers: [SessionsService, SessionKeyResolver],
})
export class SessionsModule {}
