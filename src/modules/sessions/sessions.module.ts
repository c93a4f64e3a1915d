import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { SessionEntity } from './entities/session.entity';
import { SessionKeyResolver } from './session-key.resolver';
import { SessionsController } from './sessions.controller';
import { SessionsRepository } from './sessions.repository';
import { SessionsService } from './sessions.service';

@Module({
  imports: [DatabaseModule.forFeature([SessionEntity])],
  controllers: [SessionsController],
  providers: [SessionsRepository, SessionsService, SessionKeyResolver],
})
export class SessionsModule {}
