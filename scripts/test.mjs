// `npm test`: the whole suite, each group of tiers in a Jest process of its own, as .ci/run does. In one
// process Jest keeps every spec file's modules (with Node's VM modules, which the end-to-end tests of the
// embedded PGlite database need, a spec file's sandbox is never freed), and the whole suite ran out of
// 6 GB of heap after 155 of its 198 files. With arguments (`npm test -- test/tokens.e2e-spec.ts`, a
// `--selectProjects`), one Jest run with them.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const jest = [
  '--experimental-vm-modules',
  '--no-warnings=ExperimentalWarning',
  '--max-old-space-size=6144',
  join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
];
const run = (args) =>
  spawnSync(process.execPath, [...jest, ...args], { cwd: root, stdio: 'inherit' }).status ?? 1;

const given = process.argv.slice(2);
if (given.length) process.exit(run(given));

const groups = [
  {
    name: 'unit, service, controller and lint',
    args: ['--selectProjects', 'unit', 'service', 'controller', 'lint'],
  },
  // --forceExit: a test that fails half-way (a boot that timed out) may leave a handle open. Two workers:
  // most of these files wait on servers, PostgreSQL and child processes, and each makes its own database,
  // ports and token directory (on 2 cores: 1,157 s with Jest's default of one worker, 624 s with two).
  {
    name: 'medium, end-to-end and OpenAPI',
    args: ['--selectProjects', 'medium', 'e2e', 'openapi', '--maxWorkers=2', '--forceExit'],
  },
  { name: 'timing (alone)', args: ['--selectProjects', 'timing', '--runInBand', '--forceExit'] },
];
const failed = [];
for (const { name, args } of groups) {
  process.stdout.write(`\n==> npm test: ${name}\n`);
  if (run(args) !== 0) failed.push(name);
}
process.stdout.write(
  failed.length ? `\nnpm test: failed in ${failed.join('; ')}\n` : '\nnpm test: every tier passed\n',
);
process.exit(failed.length ? 1 : 0);
