import type { ApplicationType } from '../../common/auth/permissions';
import { addFieldError, type FieldErrors } from '../../common/errors/problem.exception';

export const MAX_ALLOWED_ORIGINS = 20;

/**
 * `allowed_origins` of a public application: the origins whose pages may embed the card elements' frames
 * (their `frame-ancestors`, docs/elements.md). Each is an origin exactly as a browser writes it:
 * `http` or `https`, a host, an optional port, nothing else (no path, no trailing slash, no wildcard, no
 * default port spelled out). Answers the list without duplicates, or undefined with the errors added
 * (each by its index); other application types refuse the field.
 */
export function checkAllowedOrigins(
  type: ApplicationType,
  value: unknown,
  errors: FieldErrors,
): string[] | undefined {
  if (type !== 'public') {
    addFieldError(errors, 'allowed_origins', 'only public applications have allowed_origins');
    return undefined;
  }
  if (!Array.isArray(value)) {
    addFieldError(errors, 'allowed_origins', 'allowed_origins must be an array of origins');
    return undefined;
  }
  if (value.length > MAX_ALLOWED_ORIGINS) {
    addFieldError(errors, 'allowed_origins', `allowed_origins holds at most ${MAX_ALLOWED_ORIGINS} origins`);
    return undefined;
  }
  let valid = true;
  value.forEach((origin: unknown, i) => {
    if (!isOrigin(origin)) {
      addFieldError(
        errors,
        `allowed_origins[${i}]`,
        'must be an origin as a browser writes it: http(s)://host or http(s)://host:port, without a path',
      );
      valid = false;
    }
  });
  return valid ? [...new Set(value as string[])] : undefined;
}

function isOrigin(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 300) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (
    (url.protocol === 'https:' || url.protocol === 'http:') &&
    url.origin === value &&
    // A name of letters, digits, dots and dashes, or an IPv6 address: no wildcard.
    /^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/.test(url.hostname)
  );
}
