import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why an import is refused; the values are the problems' `code` on the wire (docs/errors.md). */
export enum ImportsErrorCode {
  /** No such import in the tenant (another tenant's is never told apart from none). */
  NotFound = 'not_found',
  /** The body is not an OpenPGP message (armored or binary). */
  NotAMessage = 'not_an_openpgp_message',
  /** The message is encrypted to other keys than the tenant's import key (another tenant's, say). */
  WrongKey = 'import_key_mismatch',
}

const KIND: Record<ImportsErrorCode, DomainErrorKind> = {
  [ImportsErrorCode.NotFound]: 'not_found',
  [ImportsErrorCode.NotAMessage]: 'invalid',
  [ImportsErrorCode.WrongKey]: 'invalid',
};

export class ImportsException extends DomainException<ImportsErrorCode> {
  readonly kind = KIND[this.code];

  static notFound(): ImportsException {
    return new ImportsException(ImportsErrorCode.NotFound, 'Import not found');
  }

  /** A refusal of the uploaded file, named as the field `file`. */
  static file(code: ImportsErrorCode, detail: string): ImportsException {
    return new ImportsException(code, detail, { file: [detail] });
  }
}
