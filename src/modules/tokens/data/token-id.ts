import type { PipeTransform } from '@nestjs/common';
import { TokensException } from '../tokens.errors';

/**
 * Token ids: any string of 1 to 400 letters, digits, `_` and `-`, unique within its
 * tenant (the same id may exist in another tenant). Ids the vault generates are uuids. The alphabet
 * leaves out `:`, which keeps the additional authenticated data of sealed values (`tenant:id:data`)
 * unambiguous, and every character a URL path, a proxy expression or a search query would treat apart.
 */
export const TOKEN_ID_MAX_LENGTH = 400;
export const TOKEN_ID_PATTERN = /^[A-Za-z0-9_-]{1,400}$/;
export const TOKEN_ID_FORMAT = 'id must be 1 to 400 characters of letters, digits, _ and -';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isTokenId = (value: unknown): value is string =>
  typeof value === 'string' && TOKEN_ID_PATTERN.test(value);

/**
 * The id as stored. Ids are compared exactly, but a uuid is stored in lower case: uuid ids were
 * lower-cased before any string was allowed, so a uuid names the same token in either case, as it did.
 */
export const normalizeTokenId = (id: string): string => (UUID.test(id) ? id.toLowerCase() : id);

/** A token id in a path: one that cannot be a token id names nothing, so it is a 404 like any absent token. */
export class ParseTokenIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isTokenId(value)) throw TokensException.notFound();
    return normalizeTokenId(value);
  }
}
