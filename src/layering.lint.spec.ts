import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The module boundaries that `npm run lint` enforces (.dependency-cruiser.js): the real src/ keeps them,
 * and an import that breaks one fails the check. Forbidden imports are written into a copy of src/ in a
 * temporary directory, never into src/ itself.
 */

const ROOT = join(__dirname, '..');
const CONFIG = '.dependency-cruiser.js';
/** The CLI that `npm run lint` runs, spawned: dependency-cruiser's API is ESM only, and Jest runs CommonJS. */
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

interface CruiseResult {
  summary: { violations: Violation[]; ruleSetUsed: { forbidden: { name: string }[] } };
}

interface Violation {
  type: string;
  from: string;
  to: string;
  rule: { name: string; severity: string };
}

interface Run {
  exitCode: number;
  stdout: string;
}

function depcruise(cwd: string, outputType: 'json' | 'err'): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', outputType],
      { cwd, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        // The `err` report exits with the number of errors; anything else that fails is the test's failure.
        if (error && typeof error.code !== 'number') return reject(new Error(`${error.message}\n${stderr}`));
        if (stderr.trim()) return reject(new Error(stderr));
        resolve({ exitCode: error ? Number(error.code) : 0, stdout });
      },
    );
  });
}

async function cruise(cwd: string): Promise<CruiseResult['summary']> {
  const { stdout } = await depcruise(cwd, 'json');
  return (JSON.parse(stdout) as CruiseResult).summary;
}

const violations = async (cwd: string): Promise<Violation[]> => (await cruise(cwd)).violations;

/** The temporary copies made by the tests, removed after them. */
const copies: string[] = [];

/** A copy of src/ (with what resolving imports needs) in a temporary directory, plus the given files. */
async function copyWith(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'layering-'));
  copies.push(dir);
  await cp(join(ROOT, 'src'), join(dir, 'src'), { recursive: true });
  // Service specs import their fakes from the test support; the audit tree's specs check it with the
  // standalone verifier of examples/.
  await cp(join(ROOT, 'test/support'), join(dir, 'test/support'), { recursive: true });
  await cp(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
  for (const file of [CONFIG, 'package.json', 'tsconfig.json']) await cp(join(ROOT, file), join(dir, file));
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

/** `rule: from -> to`, a package named by its folder in node_modules (the copy's node_modules is a link). */
const brief = (list: Violation[]): string[] =>
  list
    .map((v) => {
      const to = v.to.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+)\/.*$/, 'node_modules/$1');
      return `${v.rule.name}: ${v.from}${v.type === 'module' ? '' : ` -> ${to}`}`;
    })
    .sort();

describe('layering (dependency-cruiser, run by npm run lint)', () => {
  afterAll(() => Promise.all(copies.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('src/ breaks no rule (the lint command waives no known violation)', async () => {
    expect(await violations(ROOT)).toEqual([]);
  });

  it('fails when the vault imports orchestration, or common/ imports a module', async () => {
    const dir = await copyWith({
      'src/modules/tokens/layering-probe.ts':
        "import { TransactionsService } from '../orchestration/transactions/transactions.service';\n" +
        'export const probe = TransactionsService;\n',
      'src/common/layering-probe.ts':
        "import { TokensService } from '../modules/tokens/tokens.service';\n" +
        'export const probe = TokensService;\n',
    });

    const found = await violations(dir);
    expect(brief(found.filter((v) => v.type === 'dependency'))).toEqual([
      'common-knows-no-domain: src/common/layering-probe.ts -> src/modules/tokens/tokens.service.ts',
      'vault-knows-no-payments: src/modules/tokens/layering-probe.ts -> src/modules/orchestration/transactions/transactions.service.ts',
    ]);
    // orchestration already uses tokens: the probe also closes a cycle between the two modules.
    const cycles = brief(found.filter((v) => v.type !== 'dependency'));
    expect(cycles).toEqual(
      expect.arrayContaining([
        'no-circular-between-modules: src/modules/orchestration/transactions -> src/modules/tokens',
        'no-circular-between-modules: src/modules/tokens -> src/modules/orchestration/transactions',
      ]),
    );
    // (The way back through tokens/ also closes cycles between orchestration's folders, reported too.)
    for (const cycle of cycles)
      expect(cycle).toMatch(
        /^no-circular-between-(modules|orchestration-folders): src\/modules\/(tokens|orchestration)/,
      );

    // The command of `npm run lint` fails, naming the rules.
    const lint = await depcruise(dir, 'err');
    expect(lint.exitCode).toBe(found.length);
    expect(lint.stdout).toContain('error vault-knows-no-payments: src/modules/tokens/layering-probe.ts');
    expect(lint.stdout).toContain('error common-knows-no-domain: src/common/layering-probe.ts');
  });

  it('fires every rule of the configuration on an import that breaks it, and no other', async () => {
    const dir = await copyWith({
      'src/database/probe.ts':
        "import type { Principal } from '../common/auth/principal';\nexport type P = Principal;\n",
      'src/config/probe.ts':
        "import { ValidationException } from '../common/errors/domain.exception';\nexport const p = ValidationException;\n",
      'src/common/probe-domain.ts':
        "import { HealthModule } from '../modules/health/health.module';\nexport const p = HealthModule;\n",
      'src/common/probe-entry.ts':
        "import { AppModule } from '../app.module';\nexport const p = AppModule;\n",
      'src/modules/logs/probe.ts':
        "import { TokensService } from '../tokens/tokens.service';\nexport const p = TokensService;\n",
      'src/modules/orchestration/probe.ts':
        "import { ApplicationEntity } from '../applications/entities/application.entity';\nexport const p = ApplicationEntity;\n",
      'src/cli/probe.ts':
        "import { TenantEntity } from '../modules/tenants/tenant.entity';\nexport const p = TenantEntity;\n",
      'src/modules/applications/probe.ts':
        "import { FORMULAS } from '../orchestration/formulas/formulas';\nexport const p = FORMULAS;\n",
      // tenants already uses applications: a way back closes a cycle between the two modules.
      'src/modules/applications/probe-cycle.ts':
        "import { TenantsService } from '../tenants/tenants.service';\nexport const p = TenantsService;\n",
      'src/modules/sessions/probe.ts': "import '../tokens/data/validate-data.spec';\n",
      'src/modules/health/probe-dev.ts': "import fc from 'fast-check';\nexport const p = fc;\n",
      'src/modules/health/probe-undeclared.ts':
        "import safeRegex from 'safe-regex';\nexport const p = safeRegex;\n",
      'src/modules/health/probe-unresolvable.ts':
        "import { nothing } from './no-such-file';\nexport const p = nothing;\n",
      'src/modules/health/probe-orphan.ts': 'export const lonely = 1;\n',
      'src/modules/health/probe-a.ts': "import { b } from './probe-b';\nexport const a = (): unknown => b;\n",
      'src/modules/health/probe-b.ts': "import { a } from './probe-a';\nexport const b = (): unknown => a;\n",
      'src/modules/health/probe.repository.ts':
        "import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';\nexport const p = UnitOfWork;\n",
      'src/modules/health/probe.controller.ts':
        "import { ProbeRepository } from './probe-target.repository';\nexport const p = ProbeRepository;\n",
      'src/modules/health/probe-target.repository.ts': 'export class ProbeRepository {}\n',
      // transactions/ builds on formulas/: a way back closes a cycle between orchestration's folders.
      'src/modules/orchestration/formulas/probe.ts':
        "import { transition } from '../transactions/transaction-state';\nexport const p = transition;\n",
      // Allowed: a module's own folders may import each other (the module imports its DTOs, a DTO its types).
      'src/modules/tokens/dto/probe.ts':
        "import { TokensService } from '../tokens.service';\nexport const p = TokensService;\n",
    });

    const { violations: found, ruleSetUsed } = await cruise(dir);
    expect(new Set(found.map((v) => v.rule.name))).toEqual(new Set(ruleSetUsed.forbidden.map((r) => r.name)));
    // common/ reads the configuration and marks its repositories' SQL for the snapshots (database/), so the
    // config and database probes also close cycles between those folders.
    const configCycle = /^no-circular-between-modules: src\/(config|database) -> /;
    // The formulas/ probe closes cycles through every folder that builds on formulas/ and under transactions/.
    const orchestrationCycle = /^no-circular-between-orchestration-folders: /;
    const orchestrationCycles = brief(found).filter((line) => orchestrationCycle.test(line));
    expect(orchestrationCycles).toContain(
      'no-circular-between-orchestration-folders: src/modules/orchestration/formulas -> src/modules/orchestration/transactions',
    );
    // Each between two folders of orchestration (a sub-folder, such as connections/entities, counting as its
    // folder's: the rule lets a folder's own files import each other).
    for (const line of orchestrationCycles)
      expect(line).toMatch(
        /^[^:]+: src\/modules\/orchestration\/\w+(\/\w+)* -> src\/modules\/orchestration\/\w+(\/\w+)*$/,
      );
    expect(brief(found).filter((line) => !configCycle.test(line) && !orchestrationCycle.test(line))).toEqual([
      'common-knows-no-domain: src/common/probe-domain.ts -> src/modules/health/health.module.ts',
      'config-imports-nothing: src/config/probe.ts -> src/common/errors/domain.exception.ts',
      'controllers-reach-no-repository: src/modules/health/probe.controller.ts -> src/modules/health/probe-target.repository.ts',
      'database-imports-no-domain: src/database/probe.ts -> src/common/auth/principal.ts',
      'module-internals-stay-inside-modules: src/cli/probe.ts -> src/modules/tenants/tenant.entity.ts',
      'module-internals-stay-inside: src/modules/orchestration/probe.ts -> src/modules/applications/entities/application.entity.ts',
      'no-circular-between-modules: src/modules/applications -> src/modules/tenants',
      'no-circular-between-modules: src/modules/tenants -> src/modules/applications',
      'no-circular: src/modules/health/probe-a.ts -> src/modules/health/probe-b.ts',
      'no-non-package-json: src/modules/health/probe-undeclared.ts -> node_modules/safe-regex',
      'no-orphans: src/modules/health/probe-orphan.ts',
      'no-test-code-in-src: src/modules/sessions/probe.ts -> src/modules/tokens/data/validate-data.spec.ts',
      'not-to-dev-dependency: src/modules/health/probe-dev.ts -> node_modules/fast-check',
      'not-to-unresolvable: src/modules/health/probe-unresolvable.ts -> ./no-such-file',
      'nothing-imports-entry-points: src/common/probe-entry.ts -> src/app.module.ts',
      'recorders-know-nothing-they-record: src/modules/logs/probe.ts -> src/modules/tokens/tokens.service.ts',
      'repositories-are-given-their-change: src/modules/health/probe.repository.ts -> src/common/unit-of-work/unit-of-work.ts',
      'vault-knows-no-payments: src/modules/applications/probe.ts -> src/modules/orchestration/formulas/formulas.ts',
    ]);
  });
});
