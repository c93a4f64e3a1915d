import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the card elements refuse a request; the values are the problems' `code` on the wire. */
export enum ElementsErrorCode {
  /** No such element type, or no such file. */
  NotFound = 'not_found',
  /** The browser code was not built on this server (`npm run build`). */
  NotBuilt = 'elements_not_built',
}

const KIND: Record<ElementsErrorCode, DomainErrorKind> = {
  [ElementsErrorCode.NotFound]: 'not_found',
  [ElementsErrorCode.NotBuilt]: 'unavailable',
};

export class ElementsException extends DomainException<ElementsErrorCode> {
  readonly kind = KIND[this.code];

  /** `what`: `Element` (a frame of an unknown type) or `File` (an unknown script). */
  static notFound(what: 'Element' | 'File'): ElementsException {
    return new ElementsException(ElementsErrorCode.NotFound, `${what} not found`);
  }

  static notBuilt(): ElementsException {
    return new ElementsException(
      ElementsErrorCode.NotBuilt,
      'The card elements are not built on this server.',
    );
  }
}
