import type { INestApplicationContext } from '@nestjs/common';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { KeyRecords } from '../common/crypto/key-records';
import { verifyMasterKeys } from '../common/crypto/master-key-checks';
import { MasterKeyChecksRepository } from '../common/crypto/master-key-checks.repository';
import { MasterKeyRing } from '../common/crypto/master-keys';
import { neededVersions, ShareCollector } from '../common/crypto/share-custody';
import { TenantKeyStore } from '../common/crypto/tenant-key.store';
import { UnitOfWork } from '../common/unit-of-work/unit-of-work';
import { ConfigError } from '../config/load-config';
import type { AdminRequest } from '../modules/admin/admin-operations';
import { CliError } from './cli-error';

/** The operations that use the key-encrypting keys in the CLI's own process. */
export const NEEDS_KEK: ReadonlySet<AdminRequest['op']> = new Set([
  'tenant.create',
  'keys.rotate',
  'keys.rotate-tenant-keys',
  'keys.rotate-to',
  'logs.verify',
]);

/** One line offered, and where it came from (a file's name, or `standard input`): never its content. */
interface Offer {
  line: string;
  from: string;
}

/** Every `*.txt` file's first line in `dir`, by file name. */
function* fromDirectory(dir: string): Generator<Offer> {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((name) => name.endsWith('.txt'))
      .sort();
  } catch {
    throw new CliError(`--shares-from: ${dir} cannot be read`);
  }
  for (const name of names) {
    const file = join(dir, name);
    let line: string;
    try {
      line = readFileSync(file, 'utf8').split('\n')[0];
    } catch {
      throw new CliError(`--shares-from: ${file} cannot be read`);
    }
    yield { line, from: file };
  }
}

/** Standard input, line by line, for as long as the caller asks. */
async function* fromStdin(): AsyncGenerator<Offer> {
  const lines = createInterface({ input: process.stdin, terminal: false, crlfDelay: Infinity });
  try {
    for await (const line of lines) yield { line, from: 'standard input' };
  } finally {
    lines.close();
    process.stdin.destroy();
  }
}

const describe = (collector: ShareCollector): string =>
  collector.needed
    .map((check) => `${check.version} (${check.threshold} of ${check.shares} shares)`)
    .join(', ');

/**
 * KEY_PROVIDER=split in the CLI: an operation that needs the key-encrypting key opens it here, from the
 * custodians' share lines (every `*.txt` file's first line in `sharesFrom`, or standard input line by
 * line, read only until every version needed has its threshold), through the server's code path
 * (ShareCollector, `openShares`), checked against the database, then held by this process only until
 * it exits. A refused line is named (never shown) on standard error and does not count.
 */
export async function unsealForCli(
  context: INestApplicationContext,
  op: AdminRequest['op'],
  sharesFrom: string | undefined,
): Promise<void> {
  const ring = context.get(MasterKeyRing);
  if (!ring.sealed || ring.provider !== 'split' || !NEEDS_KEK.has(op)) return;
  const work = context.get(UnitOfWork);
  const checks = context.get(MasterKeyChecksRepository);
  const tenantKeys = context.get(TenantKeyStore);
  const needed = await work.transaction({}, (change) => neededVersions(change, checks, tenantKeys));
  if (!needed.length)
    throw new CliError(
      'KEY_PROVIDER=split: no key ceremony is recorded for this database; run `vault keys ceremony --shares N --threshold M` first (docs/keys.md)',
    );
  const collector = new ShareCollector(needed);
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const interactive = sharesFrom === undefined && process.stdin.isTTY;
  if (interactive) say(`Enter the shares of key ${describe(collector)}, one line each:`);
  const done: string[] = [];
  const lines = sharesFrom === undefined ? fromStdin() : fromDirectory(sharesFrom);
  for await (const { line, from } of lines) {
    if (!line.trim()) continue;
    const offered = collector.offer(line);
    if ('refused' in offered) {
      say(`${from}: share refused: ${offered.refused}. ${offered.detail}`);
      continue;
    }
    const { counted, index } = offered;
    if (interactive)
      say(`share ${index} of key ${counted.version}: ${offered.progress} of ${counted.threshold}`);
    if (!offered.full) continue;
    const { indexes, opened } = await collector.open(counted);
    if (!opened) {
      say(
        `shares ${indexes.join(', ')} do not open key ${counted.version}: at least one is not a share of it; they were forgotten`,
      );
      continue;
    }
    done.push(`${counted.version} by shares ${indexes.join(', ')}`);
    if (!collector.collecting) break;
    if (interactive) say(`key ${counted.version} open; now key ${collector.collecting.version}`);
  }
  const missing = collector.collecting;
  if (missing) {
    const counted = collector.progress(missing.version);
    collector.forget();
    throw new CliError(
      `KEY_PROVIDER=split: not enough shares to open key ${missing.version} (${counted} counted, ${missing.threshold} needed). This command needs key ${describe(collector)}: give their share lines on standard input or with --shares-from DIR. Nothing was changed.`,
    );
  }
  const keys = collector.keys();
  collector.forget();
  try {
    await verifyMasterKeys(new MasterKeyRing(keys, 'KEY_PROVIDER=split', 'split'), {
      work,
      checks,
      tenantKeys,
    });
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message);
    throw error;
  }
  ring.unseal(keys);
  await context
    .get(KeyRecords)
    .note(
      keys.at(-1)!.version,
      'use',
      `CLI (pid ${process.pid}, ${op}): key ${done.join('; key ')} for this command only`,
    );
}
