/**
 * The ISO 8601 instants the API accepts: date-times `YYYY-MM-DDThh:mm[:ss[.f+]]`
 * with `Z`, `±hh:mm` or `±hhmm` (none means UTC, not the server's zone), and dates `YYYY-MM-DD`
 * (midnight UTC). Fractions past milliseconds are cut. Anything else, or a day that does not exist
 * (2026-02-30, 24:00), is not an instant.
 */
const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2}))?)?$/;

export function parseInstant(value: unknown): Date | null {
  if (typeof value !== 'string' || value.length > 40) return null;
  const m = INSTANT.exec(value);
  if (!m) return null;
  const [year, month, day, hour = 0, minute = 0, second = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(
    (part) => (part === undefined ? undefined : Number(part)),
  ) as number[];
  const millis = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  // Date.UTC rolls 2026-02-30 over to March: such a day does not exist.
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return null;
  let offsetMinutes = 0;
  if (m[9]) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 14 || offsetMins > 59) return null;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const date = new Date(utc - offsetMinutes * 60_000);
  return Number.isNaN(date.getTime()) ? null : date;
}

export const isInstant = (value: unknown): value is string => parseInstant(value) !== null;
