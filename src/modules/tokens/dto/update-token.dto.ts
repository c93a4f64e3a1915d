import { createParamDecorator, ExecutionContext, PipeTransform } from '@nestjs/common';
import { ApiHideProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, validate, ValidateBy } from 'class-validator';
import type { Request } from 'express';
import { addFieldError, badRequest, FieldErrors } from '../../../common/errors/problem.exception';
import { flattenValidationErrors, validationProblem } from '../../../common/errors/validation';
import {
  EXPIRES_AT_FORMAT,
  FINGERPRINT_EXPRESSION_FORMAT,
  isDateTime,
  isExpression,
  isExpressionList,
  isPlainObject,
  SEARCH_INDEXES_FORMAT,
} from '../tokenize/tokenize-request';

/** One check, one message (class-validator would give one message per failed decorator). */
const Satisfies = (name: string, test: (value: unknown) => boolean, message: string): PropertyDecorator =>
  ValidateBy({ name, validator: { validate: test, defaultMessage: () => message } });

const IMMUTABLE = (field: string) => `${field} cannot be changed: token data is immutable`;

/**
 * `PATCH /tokens/{id}` (a JSON merge patch). The expressions are checked against the expression
 * language by the service; the expiry must also lie in the future, and the merged metadata must hold
 * at most 20 keys of at most 1024 characters each.
 */
export class UpdateTokenDto {
  /** Token data is immutable: present only to say so by name rather than as an unknown property. */
  @ApiHideProperty()
  @Satisfies('isAbsent', (value) => value === undefined, IMMUTABLE('data'))
  data?: never;

  @ApiHideProperty()
  @Satisfies('isAbsent', (value) => value === undefined, IMMUTABLE('type'))
  type?: never;

  /** Merged into the token's metadata: a null value removes its key; null removes all metadata. */
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', nullable: true },
    nullable: true,
    example: { customer_id: 'c_42', old_key: null },
  })
  @IsOptional()
  @Satisfies('isMetadataPatch', isPlainObject, 'metadata must be an object')
  metadata?: Record<string, string | null> | null;

  /**
   * Replace the search indexes (at most 20 expressions); evaluated over the stored data, so a change
   * needs a reveal rule with token:read over the token.
   */
  @ApiPropertyOptional({ type: [String], nullable: true, maxItems: 20 })
  @IsOptional()
  @Satisfies('isExpressionList', isExpressionList, SEARCH_INDEXES_FORMAT)
  search_indexes?: string[] | null;

  /** A future ISO 8601 date-time, or null for none. Setting it or moving it earlier needs token:delete. */
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true })
  @IsOptional()
  @Satisfies('isDateTime', isDateTime, EXPIRES_AT_FORMAT)
  expires_at?: string | null;

  /** Replace the fingerprint expression (null: the type's default); a change needs a reveal rule too. */
  @ApiPropertyOptional({ type: String, nullable: true, minLength: 1 })
  @IsOptional()
  @Satisfies('isExpression', isExpression, FINGERPRINT_EXPRESSION_FORMAT)
  fingerprint_expression?: string | null;
}

/**
 * The body of `PATCH /tokens/{id}`, validated as an UpdateTokenDto. Built by hand rather than by the
 * global ValidationPipe, which deletes `__proto__`, `constructor` and `prototype` without a word: here
 * they are unknown properties, reported as such, as they always were. class-validator's whitelist does
 * not see names that Object.prototype has either, so those are reported before it runs. Every value is
 * JSON as sent, so nothing needs converting.
 */
export class UpdateTokenPipe implements PipeTransform<unknown, Promise<UpdateTokenDto>> {
  async transform(body: unknown): Promise<UpdateTokenDto> {
    if (!isPlainObject(body)) throw badRequest('The body must be an object.');
    const errors: FieldErrors = {};
    const dto = new UpdateTokenDto();
    for (const [key, value] of Object.entries(body)) {
      if (key in Object.prototype) addFieldError(errors, key, `property ${key} should not exist`);
      else Object.defineProperty(dto, key, { value, enumerable: true, writable: true, configurable: true });
    }
    const found = await validate(dto, {
      whitelist: true,
      forbidNonWhitelisted: true,
      validationError: { target: false, value: false },
    });
    for (const [path, messages] of Object.entries(flattenValidationErrors(found)))
      for (const message of messages) addFieldError(errors, path, message);
    if (Object.keys(errors).length) throw validationProblem(errors);
    return dto;
  }
}

/**
 * The request body, out of the global ValidationPipe's way (it leaves custom parameter decorators
 * alone): `@TokenPatch(new UpdateTokenPipe())`.
 */
export const TokenPatch = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): unknown => ctx.switchToHttp().getRequest<Request>().body,
);
