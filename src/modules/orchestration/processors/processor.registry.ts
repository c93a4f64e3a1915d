import { Injectable } from '@nestjs/common';
import type { ProcessorPort } from './processor.port';
import { SANDBOX_PROCESSORS } from './sandbox-vendors';

/**
 * Live vendor integrations: a class implementing ProcessorPort, added here, replaces the sandbox for
 * its formula. None ships yet; every formula processes through its sandbox.
 */
export const LIVE_PROCESSORS: (new () => ProcessorPort)[] = [];

/** The processor of each formula: its live integration when there is one, else its sandbox. */
@Injectable()
export class ProcessorRegistry {
  private readonly byFormula = new Map<string, ProcessorPort>();

  constructor() {
    for (const Processor of [...SANDBOX_PROCESSORS, ...LIVE_PROCESSORS]) {
      const processor = new Processor();
      this.byFormula.set(processor.formulaId, processor);
    }
  }

  for(formulaId: string): ProcessorPort {
    const processor = this.byFormula.get(formulaId);
    if (!processor) throw new Error(`no processor for formula ${formulaId}`);
    return processor;
  }
}
