import { Global, Module } from '@nestjs/common';
import { Clock } from './clock';
import { ExclusiveJobRunner } from './exclusive';

@Global()
@Module({ providers: [Clock, ExclusiveJobRunner], exports: [Clock, ExclusiveJobRunner] })
export class JobsModule {}
