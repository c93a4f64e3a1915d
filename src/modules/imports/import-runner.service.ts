import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { existsSync } from 'node:fs';
import type { ReadableStream } from 'node:stream/web';
import type { PrivateKey } from 'openpgp';
import type { TenantKeys } from '../../common/crypto/tenant-keys.service';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { Clock } from '../../common/jobs/clock';
import { ExclusiveJobRunner } from '../../common/jobs/exclusive';
import { Metrics } from '../../common/metrics/metrics';
import { systemOrigin } from '../../common/unit-of-work/change';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { AppConfig } from '../../config/app-config';
import { LOCK_KEYS } from '../../database/data-source';
import { BuyersService } from '../orchestration/buyers/buyers.service';
import { ConnectionTokensService } from '../orchestration/buyers/connection-tokens.service';
import { ValidationException } from '../../common/errors/domain.exception';
import { ImportedCards, type PreparedCards } from '../tokens/tokenize/imported-cards';
import { csvColumns, csvLine, jsonLine, type ParsedLine } from './card-lines';
import type { ImportFormat } from './entities/token-import.entity';
import { decryptFile, linesOf, type RawLine, removeFile } from './import-file';
import { connectionAad, privateKeyOf, sealConnection } from './import-key';
import {
  type BatchCounts,
  type ImportResultRow,
  type ImportRow,
  ImportsRepository,
} from './imports.repository';
import { ImportsService } from './imports.service';
import { sweepUploads } from './upload-sweep';

/** Lines per batch: one transaction with its tokens, buyers, results and checkpoint. */
export const IMPORT_BATCH = 1000;
/** How often the uploads no job waits for are looked for (`sweepUploads`). */
const SWEEP_EVERY_MS = 10 * 60_000;

/** A batch of lines ready to write (`ImportRunnerService.prepare`): lines `from` (exclusive) to `to`. */
interface Batch {
  lines: ParsedLine[];
  from: number;
  to: number;
  cards: PreparedCards;
  connections: (Buffer | null)[];
  now: Date;
}

/** Another run moved the job's checkpoint under this batch: it is rolled back, nothing of it stays. */
class CheckpointMoved extends Error {}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Runs import jobs (docs/migration.md), one at a time across instances (an advisory lock,
 * `ExclusiveJobRunner.runAlone`), oldest first. A job reads its file twice, decrypting it as a stream each
 * time: first through to its end, which checks the message's integrity and counts its lines (`total`);
 * then a batch of lines at a time, each batch one transaction with the tokens it made, the buyers and
 * stored cards, its results and the job's checkpoint (`lines_done`, moved only from where the batch
 * began). A process killed mid-job leaves the last batch committed or none of it; the next run (here or
 * on another instance) skips the lines done and goes on. The upload is deleted once the job ends.
 */
@Injectable()
export class ImportRunnerService implements OnModuleInit {
  private readonly logger = new Logger('Imports');
  private sweptAt = -Infinity;

  constructor(
    private readonly imports: ImportsRepository,
    private readonly service: ImportsService,
    private readonly cards: ImportedCards,
    private readonly buyers: BuyersService,
    private readonly connectionTokens: ConnectionTokensService,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly jobs: ExclusiveJobRunner,
    private readonly work: UnitOfWork,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    if (this.config.JOBS_ENABLED) this.service.onCreated(() => void this.tick());
  }

  @Interval(1_000)
  async tick(): Promise<void> {
    await this.jobs.runAlone('token-imports', LOCK_KEYS.jobTokenImports, () => this.runPending());
  }

  /** Runs the jobs waiting, oldest first, until none is left or the process stops; answers how many ran. */
  async runPending(): Promise<number> {
    await this.sweep();
    let ran = 0;
    for (;;) {
      const [next] = await this.imports.unfinished(1);
      if (!next || this.jobs.stopping) return ran;
      if (!(await this.run(next.tenant_id, next.id))) return ran;
      ran++;
    }
  }

  /**
   * Every 10 minutes, the uploads left by a process that died mid-upload (or between a job's end and its
   * file's deletion) are deleted: nothing else would, and each may be up to 2 GiB.
   */
  async sweep(): Promise<number> {
    const now = this.clock.now();
    if (now.getTime() - this.sweptAt < SWEEP_EVERY_MS) return 0;
    this.sweptAt = now.getTime();
    const removed = await sweepUploads(this.service.directory, now, async (tenantId, id) => {
      const job = await this.imports.find(tenantId, id);
      return job?.status === 'pending' || job?.status === 'processing';
    });
    if (removed) this.logger.warn({ removed }, 'abandoned uploads deleted');
    return removed;
  }

  /** Runs one job to its end; false when it stopped before (the process stopping). */
  async run(tenantId: string, id: string): Promise<boolean> {
    const job = await this.imports.find(tenantId, id);
    if (!job || job.status === 'completed' || job.status === 'failed') return true;
    const path = this.service.fileOf(job);
    // Every instance must see the uploads (IMPORT_DIR): without its file, the job cannot be run anywhere.
    if (!existsSync(path)) return this.finish(job, path, 'upload_missing');
    const keys = await this.tenantKeys.keysFor(tenantId);
    const keyRow = await this.imports.findKey(tenantId);
    if (!keyRow) return this.finish(job, path, 'import_key_missing');
    const key = await privateKeyOf(keyRow, keys);
    if (job.total === null) {
      const checked = await this.check(path, key, job.format);
      if ('error' in checked) return this.finish(job, path, checked.error);
      await this.work.transaction(systemOrigin(tenantId), async (change) => {
        if (await this.imports.start(change, tenantId, id, checked.total, this.clock.now()))
          change.audit({
            entityType: 'token_import',
            entityId: id,
            operation: 'update',
            message: 'Import started',
          });
      });
      Object.assign(job, { total: checked.total, status: 'processing' });
    }
    const outcome = await this.process(job, path, key, keys);
    if (outcome === 'stopped') return false;
    return this.finish(job, path, outcome === 'done' ? null : outcome.error);
  }

  /**
   * The first read: through to the end, which checks the message's integrity (modification detection),
   * counting the data lines (blank ones are none; a CSV file's header neither), nothing kept.
   */
  private async check(
    path: string,
    key: PrivateKey,
    format: ImportFormat,
  ): Promise<{ total: number } | { error: string }> {
    let data: ReadableStream<Uint8Array>;
    try {
      data = (await decryptFile(path, key)).data;
    } catch {
      return { error: 'not_decryptable' };
    }
    let total = 0;
    let header = false;
    try {
      for await (const raw of linesOf(data)) {
        if (raw.line === 1 && format === 'csv') {
          const text = decoded(raw);
          const columns = text === undefined ? { error: 'malformed_header' } : csvColumns(text);
          if ('error' in columns) {
            await data.cancel().catch(() => undefined);
            return { error: `csv_${columns.error}` };
          }
          header = true;
        } else if (raw.tooLong || raw.bytes.length > 0) total++;
      }
    } catch {
      return { error: 'integrity_check_failed' };
    }
    if (format === 'csv' && !header) return { error: 'csv_missing_header' };
    return { total };
  }

  /**
   * The second read: the lines after the checkpoint, a batch at a time. A batch is prepared (parsed,
   * sealed, fingerprinted) while the one before it is written, one write at a time, in order.
   */
  private async process(
    job: ImportRow,
    path: string,
    key: PrivateKey,
    keys: TenantKeys,
  ): Promise<'done' | 'stopped' | { error: string }> {
    const { data } = await decryptFile(path, key);
    const now = this.clock.now();
    let columns: string[] = [];
    let from = job.lines_done;
    let last = from;
    let lines: ParsedLine[] = [];
    let writing: Promise<void> = Promise.resolve();
    const write = async () => {
      const batch = this.prepare(job, keys, lines, from, last, now);
      [from, lines] = [last, []];
      await writing;
      writing = this.write(job, batch);
      // Awaited before the next write or at the end; a failure is seen there, never unhandled.
      writing.catch(() => undefined);
    };
    try {
      for await (const raw of linesOf(data)) {
        if (raw.line === 1 && job.format === 'csv') {
          const header = decoded(raw);
          const found = header === undefined ? { error: 'malformed_header' } : csvColumns(header);
          if ('error' in found) return { error: `csv_${found.error}` };
          columns = found.columns;
        } else if (raw.line > from && (raw.tooLong || raw.bytes.length > 0))
          lines.push(parse(raw, job.format, columns, now));
        if (raw.line <= from) continue;
        last = raw.line;
        if (lines.length >= IMPORT_BATCH) {
          await write();
          if (this.jobs.stopping) {
            await data.cancel().catch(() => undefined);
            await writing;
            return 'stopped';
          }
        }
      }
      if (last > from) await write();
    } finally {
      await writing;
    }
    return 'done';
  }

  /** A batch made ready to write, without the database: its token rows and sealed processor tokens. */
  private prepare(
    job: ImportRow,
    keys: TenantKeys,
    lines: ParsedLine[],
    from: number,
    to: number,
    now: Date,
  ): Batch {
    const good = lines.flatMap((line) => (line.ok ? [line] : []));
    const cards = this.cards.prepare(
      keys,
      job.tenant_id,
      job.created_by,
      good.map(({ card }) => ({
        number: card.number,
        expiration_month: card.expirationMonth,
        expiration_year: card.expirationYear,
        ...(card.holderName ? { holder_name: card.holderName } : {}),
        metadata: card.metadata,
      })),
      now,
    );
    // The processor's token waits, sealed, for the stored card to carry it (docs/migration.md).
    const connections = lines.map((line) =>
      line.ok && line.connection
        ? sealConnection(keys, connectionAad(job.tenant_id, job.id, line.line), line.connection)
        : null,
    );
    return { lines, from, to, cards, connections, now };
  }

  /** One batch: its tokens, stored cards, results and the checkpoint, in one transaction. */
  private async write(job: ImportRow, batch: Batch): Promise<void> {
    const { tenant_id: tenantId, id } = job;
    const { lines, from, to, now } = batch;
    const counts: BatchCounts = { imported: 0, duplicates: 0, failed: 0 };
    await this.work.transaction({}, async (change) => {
      const stored = await this.cards.store(change, batch.cards, now);
      const results: ImportResultRow[] = [];
      const kept: { buyerExternalId: string; tokenId: string; fingerprint: string; result: number }[] = [];
      let next = 0;
      lines.forEach((line, i) => {
        const row = { tenant_id: tenantId, import_id: id, line: line.line, external_id: line.externalId };
        if (!line.ok) {
          counts.failed++;
          results.push({ ...row, status: 'failed', token_id: null, ...errorOf(line), connection: null });
          return;
        }
        const card = stored[next++];
        if (card.duplicate) counts.duplicates++;
        else counts.imported++;
        results.push({
          ...row,
          status: card.duplicate ? 'duplicate' : 'imported',
          token_id: card.tokenId,
          error_field: null,
          error_code: null,
          connection: batch.connections[i],
        });
        if (line.buyerExternalId)
          kept.push({
            buyerExternalId: line.buyerExternalId,
            tokenId: card.tokenId,
            fingerprint: card.fingerprint,
            result: results.length - 1,
          });
      });
      // A card stored for another buyer already (an earlier line, or before the import) stays there:
      // its line says so, naming the column.
      const elsewhere = await this.buyers.storeImported(change, tenantId, kept, now);
      for (const [i, stored] of elsewhere.entries())
        if (stored)
          Object.assign(results[kept[i].result], {
            error_field: 'buyer_external_id',
            error_code: 'stored_for_another_buyer',
          });
      // Processors' tokens go on the stored cards (docs/migration.md); one refused leaves its card
      // imported, its result line naming why (the refusal is decided before anything is written).
      for (const [i, line] of lines.entries()) {
        const result = results[i];
        // Not on a card stored for another buyer: that buyer's mandates are not this line's.
        if (!line.ok || !line.connection || !result.token_id || result.error_code) continue;
        const { connection_token: token, ...rest } = line.connection;
        try {
          await this.connectionTokens.record(change, tenantId, result.token_id, [{ ...rest, token }]);
        } catch (error) {
          if (!(error instanceof ValidationException)) throw error;
          Object.assign(result, refusedConnection(error));
        }
      }
      await this.imports.insertResults(change, results);
      if (!(await this.imports.checkpoint(change, tenantId, id, from, to, counts)))
        throw new CheckpointMoved();
      if (counts.imported)
        change.afterCommit(() => this.metrics.tokensCreated(Array<string>(counts.imported).fill('card')));
    });
  }

  /** The job ends (completed when `error` is null), with its audit row; its upload is deleted. */
  private async finish(job: ImportRow, path: string, error: string | null): Promise<boolean> {
    await this.work.transaction(systemOrigin(job.tenant_id), async (change) => {
      const status = error ? 'failed' : 'completed';
      if (await this.imports.finish(change, job.tenant_id, job.id, status, error, this.clock.now()))
        change.audit({
          entityType: 'token_import',
          entityId: job.id,
          operation: 'update',
          message: error ? `Import failed (${error})` : 'Import completed',
        });
    });
    await removeFile(path);
    if (error) this.logger.warn({ import_id: job.id, code: error }, 'import failed');
    return true;
  }
}

/** A line's text, or undefined when it is not UTF-8. */
function decoded(raw: RawLine): string | undefined {
  try {
    return utf8.decode(raw.bytes);
  } catch {
    return undefined;
  }
}

function parse(raw: RawLine, format: ImportFormat, columns: string[], now: Date): ParsedLine {
  const fail = (code: string): ParsedLine => ({
    line: raw.line,
    ok: false,
    externalId: null,
    error: { field: null, code },
  });
  if (raw.tooLong) return fail('line_too_long');
  const text = decoded(raw);
  if (text === undefined) return fail('invalid_encoding');
  return format === 'csv' ? csvLine(raw.line, text, columns, now) : jsonLine(raw.line, text, now);
}

function errorOf(
  line: Extract<ParsedLine, { ok: false }>,
): Pick<ImportResultRow, 'error_field' | 'error_code'> {
  return { error_field: line.error.field, error_code: line.error.code };
}

/**
 * A result line's error for a processor's token the stored card did not take: the column at fault
 * (`buyer_external_id` when the card is stored for no buyer), never a value.
 */
function refusedConnection(error: ValidationException): { error_field: string; error_code: string } {
  const path = Object.keys(error.errors ?? {})[0] ?? '';
  if (path === 'payment_method_id') return { error_field: 'buyer_external_id', error_code: 'not_stored' };
  const field = /\.(\w+)$/.exec(path)?.[1];
  const column =
    field === 'token' ? 'connection_token' : field === 'connection_customer' ? 'connection_customer' : field;
  return { error_field: column ?? 'connection_id', error_code: 'refused' };
}
