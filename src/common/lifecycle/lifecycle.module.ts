import { Global, Module } from '@nestjs/common';
import { ShutdownState } from './shutdown-state';

/** The process's shutdown state, shared by the readiness check and the components that run background work. */
@Global()
@Module({ providers: [ShutdownState], exports: [ShutdownState] })
export class LifecycleModule {}
