/** How variables' text becomes values (class-transformer `@Transform`s), and how a database is named. */
import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString } from 'class-validator';

export const toBoolean = ({ value }: { value: unknown }): unknown => {
  if (value === undefined || value === '') return undefined;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return value;
};
export const toInteger = ({ value }: { value: unknown }): unknown =>
  value === undefined || value === ''
    ? undefined
    : typeof value === 'string' && /^-?\d+$/.test(value)
      ? Number(value)
      : value;
export const emptyToUndefined = ({ value }: { value: unknown }): unknown =>
  value === '' ? undefined : value;

/** Where a PostgreSQL URL points, without its credentials: `host:port/database`. */
export function databaseTarget(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return 'the server in DATABASE_URL';
  }
}

/** An optional text setting (a path, a name): unset when empty. */
export const OptionalText = (): PropertyDecorator =>
  applyDecorators(IsOptional(), Transform(emptyToUndefined), IsString());

/** An integer setting, read from its text (further checks follow it: `@Min`, `@Max`). */
export const Integer = (): PropertyDecorator => applyDecorators(Transform(toInteger), IsInt());
