import { Global, Module } from '@nestjs/common';
import { Clock } from './clock';
import { ExclusiveJobRunner } from './exclusive';
import { JobRunsRepository } from './job-runs.repository';
import { RetentionJob } from './retention.job';

@Global()
@Module({
  providers: [Clock, JobRunsRepository, ExclusiveJobRunner, RetentionJob],
  exports: [Clock, ExclusiveJobRunner, RetentionJob],
})
export class JobsModule {}
