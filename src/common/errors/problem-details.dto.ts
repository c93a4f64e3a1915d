import { ApiPropertyOptional } from '@nestjs/swagger';
import { getSchemaPath } from '@nestjs/swagger';

/** RFC 9457 problem details, the body of every error response (`application/problem+json`). */
export class ProblemDetailsDto {
  /** @example "about:blank" */
  type: string;
  /** @example "Bad Request" */
  title: string;
  /** @example 400 */
  status: number;
  /** @example "name: name must be longer than or equal to 1 characters" */
  detail: string;
  /** A stable machine-readable code. @example "validation_failed" */
  code?: string;

  /** Validation failures only: the JSON path of each bad field and its messages. */
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string' } },
    example: { 'data.number': ['card number fails the Luhn check'] },
  })
  errors?: Record<string, string[]>;

  /** 500 only: the trace id to quote when reporting the failure. */
  trace_id?: string;
}

/** The `content` of an error response in the OpenAPI document. */
export function problemContent(): Record<string, { schema: { $ref: string } }> {
  return { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemDetailsDto) } } };
}
