import { DynamicModule, Global, Module, Type } from '@nestjs/common';
import { EventOutbox } from './event-outbox';

/**
 * Makes the EventOutbox available to every module. `outbox`: a module that provides and exports it
 * (the webhooks module's outbox, which nothing in common/ imports).
 */
@Global()
@Module({})
export class EventsModule {
  static forRoot(outbox: Type | DynamicModule): DynamicModule {
    return { module: EventsModule, imports: [outbox], exports: [outbox] };
  }
}

export { EventOutbox };
