import { knownVariables } from './load-config';

/** Levenshtein distance, stopping early once it exceeds `limit`. */
export function editDistance(a: string, b: string, limit = Infinity): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      best = Math.min(best, current[j]);
    }
    if (best > limit) return limit + 1;
    previous = current;
  }
  return previous[b.length];
}

/**
 * One warning per environment variable that the service does not read but whose name is one or two
 * letters away from one it does (DATABASE_ULR for DATABASE_URL, a lower-case `port`): such a typo would
 * otherwise start the service silently on the default. Names of four letters or less (PORT) only match
 * at one letter, so that PATH or TERM are not taken for PORT.
 */
export function misspelledVariables(env: NodeJS.ProcessEnv): string[] {
  const known = knownVariables();
  const warnings: string[] = [];
  for (const name of Object.keys(env)) {
    if (known.includes(name)) continue;
    const upper = name.toUpperCase();
    let closest: { name: string; distance: number } | undefined;
    for (const candidate of known) {
      const limit = candidate.length <= 4 ? 1 : 2;
      const distance = editDistance(upper, candidate, limit);
      if (distance <= limit && (!closest || distance < closest.distance))
        closest = { name: candidate, distance };
    }
    if (closest)
      warnings.push(
        `Warning: the environment variable ${name} is not read by the service; did you mean ${closest.name}?`,
      );
  }
  return warnings;
}
