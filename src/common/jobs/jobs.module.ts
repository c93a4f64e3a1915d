import { Global, Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { Clock } from './clock';
import { JobRunEntity } from './entities/job-run.entity';
import { ExclusiveJobRunner } from './exclusive';
import { JobRunsRepository } from './job-runs.repository';
import { RetentionJob } from './retention.job';

@Global()
@Module({
  imports: [DatabaseModule.forFeature([JobRunEntity])],
  providers: [Clock, JobRunsRepository, ExclusiveJobRunner, RetentionJob],
  exports: [Clock, ExclusiveJobRunner, RetentionJob],
})
export class JobsModule {}
