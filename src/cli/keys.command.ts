import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CeremonyResult } from '../common/crypto/key-ceremony';
import type { GeneratedKey } from '../common/crypto/pkcs11/hsm-keys';
import type { ProviderChanged } from '../modules/admin/provider-change';
import { AppConfig } from '../config/app-config';
import { AdminClient, CliError } from './admin-client';
import { SHARES_FROM } from './shares-option';

const whole =
  (name: string) =>
  (value: string): number => {
    if (!/^\d{1,2}$/.test(value)) throw new CliError(`${name} must be a whole number from 2 to 16`);
    return Number(value);
  };

@SubCommand({
  name: 'ceremony',
  description:
    'Make a new key-encrypting key: split among custodians (--provider split, the default: prints one share per line, or writes DIR/share-<index>.txt) or inside the HSM (--provider pkcs11); the key itself is shown nowhere',
})
export class KeysCeremonyCommand extends CommandRunner {
  constructor(private readonly admin: AdminClient) {
    super();
  }

  @Option({ flags: '--provider <provider>', description: 'split (default) or pkcs11' })
  parseProvider(value: string): 'split' | 'pkcs11' {
    if (value !== 'split' && value !== 'pkcs11') throw new CliError('--provider must be split or pkcs11');
    return value;
  }

  @Option({ flags: '--shares <n>', description: 'split: how many custodians get a share (2 to 16)' })
  parseShares(value: string): number {
    return whole('--shares')(value);
  }

  @Option({ flags: '--threshold <m>', description: 'split: how many shares open the key (2 to --shares)' })
  parseThreshold(value: string): number {
    return whole('--threshold')(value);
  }

  @Option({
    flags: '--out <dir>',
    description: 'split: write each share to DIR/share-<index>.txt (mode 0600)',
  })
  parseOut(value: string): string {
    return value;
  }

  async run(
    _args: string[],
    options: { provider?: 'split' | 'pkcs11'; shares?: number; threshold?: number; out?: string },
  ): Promise<void> {
    if (options.provider === 'pkcs11') {
      if (options.shares !== undefined || options.threshold !== undefined || options.out !== undefined)
        throw new CliError('--shares, --threshold and --out are for --provider split');
      const made = (await this.admin.run({ op: 'keys.generate' })) as GeneratedKey;
      process.stderr.write(
        `Key ${made.version} made in the HSM (KCV ${made.kcv}); servers use it from their next start, then run \`vault keys rotate\`.\n`,
      );
      process.stdout.write(`${JSON.stringify(made)}\n`);
      return;
    }
    if (options.shares === undefined || options.threshold === undefined)
      throw new CliError('--shares and --threshold are required with --provider split');
    const result = (await this.admin.run({
      op: 'keys.ceremony',
      shares: options.shares,
      threshold: options.threshold,
    })) as CeremonyResult;
    process.stderr.write(
      `Key ${result.version} (check ${result.check}) split into ${result.shares.length} shares; any ${result.threshold} open it. Give each custodian one share; none is kept by the vault.\n`,
    );
    if (options.out === undefined) {
      process.stdout.write(result.shares.map((line) => `${line}\n`).join(''));
      return;
    }
    mkdirSync(options.out, { recursive: true, mode: 0o700 });
    result.shares.forEach((line, i) => {
      const file = join(options.out!, `share-${i + 1}.txt`);
      writeFileSync(file, `${line}\n`, { mode: 0o600, flag: 'wx' });
      process.stderr.write(`wrote ${file}\n`);
    });
  }
}

@SubCommand({
  name: 'rotate',
  description:
    'Re-wrap every tenant data key under the active (last) master key; refused while a running server lacks it. With --to split|pkcs11|env (every server stopped): move the key-encrypting key to another provider. Under KEY_PROVIDER=split it reads the shares of every key version it needs first',
})
export class KeysRotateCommand extends CommandRunner {
  constructor(
    private readonly admin: AdminClient,
    private readonly config: AppConfig,
  ) {
    super();
  }

  @Option({
    flags: '--batch <n>',
    description:
      'Tenant keys re-wrapped per committed batch (default 100); an interrupted rotation goes on from its last batch',
  })
  parseBatch(value: string): number {
    if (!/^\d{1,5}$/.test(value) || Number(value) < 1)
      throw new CliError('--batch must be a whole number from 1 to 99999');
    return Number(value);
  }

  @Option({
    flags: '--tenant-keys',
    description:
      "Rotate tenants' data keys instead: a new one for every tenant, every token and CVC sealed again under it in committed batches (default 500), writes going on; an interrupted run goes on where it stopped",
  })
  parseTenantKeys(): boolean {
    return true;
  }

  @Option({
    flags: '--to <provider>',
    description: 'split, pkcs11 or env: change provider (servers stopped)',
  })
  parseTo(value: string): 'split' | 'pkcs11' | 'env' {
    if (value !== 'split' && value !== 'pkcs11' && value !== 'env')
      throw new CliError('--to must be split, pkcs11 or env');
    return value;
  }

  @Option({ flags: '--shares <n>', description: '--to split: how many custodians get a share (2 to 16)' })
  parseShares(value: string): number {
    return whole('--shares')(value);
  }

  @Option({ flags: '--threshold <m>', description: '--to split: how many shares open the key' })
  parseThreshold(value: string): number {
    return whole('--threshold')(value);
  }

  @Option({
    flags: '--out <path>',
    description:
      '--to split: write each share to DIR/share-<index>.txt (0600); --to env: write the ENCRYPTION_KEYS value to FILE (0600, a new file)',
  })
  parseOut(value: string): string {
    return value;
  }

  @Option(SHARES_FROM)
  parseSharesFrom(value: string): string {
    return value;
  }

  async run(
    _args: string[],
    options: {
      to?: 'split' | 'pkcs11' | 'env';
      shares?: number;
      threshold?: number;
      out?: string;
      batch?: number;
      tenantKeys?: boolean;
      sharesFrom?: string;
    } = {},
  ): Promise<void> {
    const shares = { sharesFrom: options.sharesFrom };
    if (options.tenantKeys) {
      if (options.to)
        throw new CliError('--tenant-keys and --to are separate rotations: run one, then the other');
      const rotated = await this.admin.run({ op: 'keys.rotate-tenant-keys', batch: options.batch }, shares);
      process.stdout.write(`${JSON.stringify(rotated)}\n`);
      return;
    }
    if (options.to) {
      const changed = (await this.admin.run(
        {
          op: 'keys.rotate-to',
          to: options.to,
          shares: options.shares,
          threshold: options.threshold,
          out: options.out,
        },
        shares,
      )) as ProviderChanged;
      const settings =
        changed.to === 'env'
          ? `KEY_PROVIDER=env and ENCRYPTION_KEYS set to the line of ${options.out}`
          : `KEY_PROVIDER=${changed.to}`;
      process.stderr.write(
        `Keys moved from ${changed.from} to ${changed.to}: ${changed.rewrapped_tenants} tenant keys under ${changed.active_version}. Start the servers with ${settings}.\n`,
      );
      process.stdout.write(`${JSON.stringify(changed)}\n`);
      return;
    }
    // With the embedded database and a server running, the server rotates under its own keys: it
    // refuses when they are not the ones this command was given.
    const request = {
      op: 'keys.rotate' as const,
      active: this.config.activeKeyVersion,
      batch: options.batch,
    };
    process.stdout.write(`${JSON.stringify(await this.admin.run(request, shares))}\n`);
  }
}

@SubCommand({
  name: 'status',
  description:
    'Print, as JSON, each key-encrypting key version: who holds it (env, split or pkcs11), whether it is active, how many tenant keys it wraps',
})
export class KeysStatusCommand extends CommandRunner {
  constructor(private readonly admin: AdminClient) {
    super();
  }

  async run(): Promise<void> {
    process.stdout.write(`${JSON.stringify(await this.admin.run({ op: 'keys.status' }))}\n`);
  }
}

@Command({
  name: 'keys',
  description: 'Manage encryption keys',
  subCommands: [KeysRotateCommand, KeysCeremonyCommand, KeysStatusCommand],
})
export class KeysCommand extends CommandRunner {
  async run(): Promise<void> {
    this.command.help();
  }
}
