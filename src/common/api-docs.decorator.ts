import { applyDecorators } from '@nestjs/common';

/**
 * A route's OpenAPI description as one decorator, kept beside the module's DTOs (`dto/*.openapi.ts`) so
 * that a controller reads as routing only. The decorators are listed as they would be stacked on the
 * method, top to bottom, and applied as stacked ones are, the last first: the document (the order of
 * parameters, of responses) is the one the same decorators on the method would give.
 */
export function ApiDocs(...decorators: (MethodDecorator | ClassDecorator)[]): MethodDecorator {
  return applyDecorators(...[...decorators].reverse());
}
