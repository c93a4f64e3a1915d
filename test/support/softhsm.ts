import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Debian's SoftHSM2 module (`apt-get install softhsm2`, which .ci/run installs when missing). */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

/**
 * SoftHSM2 reads its configuration (where its tokens are) from SOFTHSM2_CONF when a process first
 * initialises it: a test's own `process.env` is a copy the module never sees, so the run's directory is
 * made here, in the global setup, and inherited by test workers and the processes they spawn.
 */
export function prepareSoftHsm(): void {
  if (process.env.SOFTHSM2_CONF) return;
  const dir = mkdtempSync(join(tmpdir(), 'vault-softhsm-'));
  mkdirSync(join(dir, 'tokens'));
  const conf = join(dir, 'softhsm2.conf');
  writeFileSync(
    conf,
    `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  process.env.SOFTHSM2_CONF = conf;
  process.env.TEST_SOFTHSM_DIR = dir;
}

/** The run's token directory (where SoftHSM2 keeps one sub-directory per token). */
export const softHsmTokens = (): string => join(process.env.TEST_SOFTHSM_DIR!, 'tokens');

/** Initialises a token of this label in the run's directory, with a user PIN. */
export function initToken(label: string, pin: string): void {
  execFileSync(
    'softhsm2-util',
    ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', '5555-0000'],
    {
      stdio: 'ignore',
    },
  );
}

/** Removes the run's SoftHSM2 directory (global teardown). */
export function removeSoftHsm(): void {
  if (process.env.TEST_SOFTHSM_DIR) rmSync(process.env.TEST_SOFTHSM_DIR, { recursive: true, force: true });
}
