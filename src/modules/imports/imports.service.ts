import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Principal } from '../../common/auth/principal';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { ValidationException } from '../../common/errors/domain.exception';
import { ProblemException } from '../../common/errors/problem.exception';
import { Clock } from '../../common/jobs/clock';
import { offsetOf, offsetPage } from '../../common/pagination/offset-pagination';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { AppConfig } from '../../config/app-config';
import type {
  ImportDto,
  ImportKeyDto,
  ImportResultDto,
  ImportResultPageDto,
  ImportResultsQueryDto,
} from './dto/imports.dto';
import { IMPORT_FORMATS, type ImportFormat } from './entities/token-import.entity';
import {
  decryptFile,
  MAX_UPLOAD_BYTES,
  NotAMessage,
  NotForThisKey,
  removeFile,
  saveUpload,
  UploadTooLarge,
} from './import-file';
import { newImportKey, privateKeyOf } from './import-key';
import { ImportsErrorCode, ImportsException } from './imports.errors';
import {
  type ImportKeyRow,
  type ImportResultRow,
  type ImportRow,
  ImportsRepository,
} from './imports.repository';

/** The media types an import's body may be sent as. */
export const IMPORT_MEDIA_TYPES = ['application/pgp-encrypted', 'application/octet-stream'];

export function importDto(row: ImportRow): ImportDto {
  return {
    id: row.id,
    status: row.status,
    format: row.format,
    total: row.total,
    imported: row.imported,
    duplicates: row.duplicates,
    failed: row.failed,
    created_at: row.created_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    completed_at: row.completed_at?.toISOString() ?? null,
    error: row.error_code ? { code: row.error_code } : null,
  };
}

const keyDto = (row: ImportKeyRow): ImportKeyDto => ({
  public_key: row.public_key,
  fingerprint: row.fingerprint.toUpperCase(),
  algorithm: row.algorithm,
  created_at: row.created_at.toISOString(),
});

export function resultDto(row: Omit<ImportResultRow, 'connection'>): ImportResultDto {
  return {
    line: row.line,
    ...(row.external_id !== null ? { external_id: row.external_id } : {}),
    ...(row.token_id !== null ? { token_id: row.token_id } : {}),
    status: row.status,
    ...(row.error_code !== null ? { error: { field: row.error_field, code: row.error_code } } : {}),
  };
}

/** The format the extension of the file name inside the message names; else a 400 naming `format`. */
function formatOf(filename: string): ImportFormat {
  const extension = extname(filename).slice(1).toLowerCase();
  if ((IMPORT_FORMATS as readonly string[]).includes(extension)) return extension as ImportFormat;
  throw ValidationException.field(
    'format',
    'give format (csv or jsonl): the file name inside the message ends in neither .csv nor .jsonl',
  );
}

/** What the uploading request gives: its body, and the media type it declares. */
export interface Upload {
  body: Readable;
  contentType: string | undefined;
}

/**
 * Card imports (docs/migration.md): the tenant's import key, the uploads that become jobs, and what the
 * jobs report. The jobs themselves are run by `ImportRunnerService`, which `create` wakes up.
 */
@Injectable()
export class ImportsService {
  /** Called once an import is committed: the runner looks for work at once rather than at its next tick. */
  private nudge: () => void = () => undefined;

  constructor(
    private readonly imports: ImportsRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
    private readonly config: AppConfig,
  ) {}

  onCreated(nudge: () => void): void {
    this.nudge = nudge;
  }

  /** Where the uploads wait for their jobs. */
  get directory(): string {
    return this.config.IMPORT_DIR ?? join(this.config.DATA_DIR, 'imports');
  }

  fileOf(row: Pick<ImportRow, 'tenant_id' | 'id'>): string {
    return join(this.directory, `${row.tenant_id}.${row.id}.pgp`);
  }

  /** GET /tokens/imports/key: the tenant's key, made on the first request (concurrent ones make one). */
  async key(origin: RequestOrigin): Promise<ImportKeyDto> {
    return keyDto(await this.keyRow(origin));
  }

  private async keyRow(origin: RequestOrigin): Promise<ImportKeyRow> {
    const tenantId = origin.actor.tenantId;
    const stored = await this.imports.findKey(tenantId);
    if (stored) return stored;
    const keys = await this.tenantKeys.keysFor(tenantId);
    const made = await newImportKey(tenantId, keys, this.clock.now());
    const row = await this.work.transaction({ actor: origin.actor }, async (change) => {
      const inserted = await this.imports.insertKey(change, made);
      if (inserted)
        change.audit({
          entityType: 'token_import',
          entityId: null,
          operation: 'create',
          message: 'Import key created',
        });
      return inserted;
    });
    return row ?? (await this.imports.findKey(tenantId))!;
  }

  /**
   * POST /tokens/imports: the body to a file as it arrives (at most 2 GiB), then checked without being
   * read through: an OpenPGP message encrypted to the tenant's import key, whose format is given or is
   * the extension of the file name inside it. Anything wrong is a 400 and leaves nothing behind; else a
   * pending job, whose first audit row is written with it.
   */
  async create(origin: RequestOrigin, upload: Upload, format: ImportFormat | undefined): Promise<ImportDto> {
    const type = upload.contentType?.split(';')[0].trim().toLowerCase();
    if (!type || !IMPORT_MEDIA_TYPES.includes(type)) {
      upload.body.resume();
      const detail = `Send the encrypted file as ${IMPORT_MEDIA_TYPES.join(' or ')}.`;
      // As the JSON routes answer a body of another type (common/context/body-parser.ts).
      throw new ProblemException(415, detail, {
        code: 'unsupported_media_type',
        errors: { 'Content-Type': [detail] },
      });
    }
    const who = origin.actor;
    const key = await this.keyRow(origin);
    const keys = await this.tenantKeys.keysFor(who.tenantId);
    const id = randomUUID();
    const path = this.fileOf({ tenant_id: who.tenantId, id });
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    let saved: { size: number; sha256: string };
    try {
      saved = await saveUpload(upload.body, path);
    } catch (error) {
      if (error instanceof UploadTooLarge)
        throw new ProblemException(413, `The file is over ${MAX_UPLOAD_BYTES} bytes (2 GiB).`, {
          code: 'payload_too_large',
        });
      // The client went away mid-upload: nothing is kept of it (a failure of the disk is the server's).
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET')
        throw new ProblemException(400, 'The upload could not be read to its end.', {
          code: 'unreadable_body',
        });
      throw error;
    }
    try {
      // BT-IDEMPOTENCY-KEY is claimed with the file's digest (`@ClaimedAfterBody`): the same key with
      // another file is refused, a retry of this one is answered the job it made.
      await origin.idempotency?.claimBody?.(saved.sha256);
      const filename = await this.filenameInside(path, await privateKeyOf(key, keys));
      const chosen = format ?? formatOf(filename);
      const row = await this.work.transaction(origin, async (change) => {
        const inserted = await this.imports.insert(change, {
          tenant_id: who.tenantId,
          id,
          status: 'pending',
          format: chosen,
          file_bytes: String(saved.size),
          created_by: who.applicationId,
          created_at: this.clock.now(),
        });
        change.audit({
          entityType: 'token_import',
          entityId: id,
          operation: 'create',
          message: 'Import created',
        });
        change.afterCommit(() => this.nudge());
        return inserted;
      });
      return importDto(row);
    } catch (error) {
      await removeFile(path);
      throw error;
    }
  }

  /** The file name inside the message, which must be for this key (only its start is decrypted). */
  private async filenameInside(path: string, key: Awaited<ReturnType<typeof privateKeyOf>>): Promise<string> {
    try {
      const decrypted = await decryptFile(path, key);
      await decrypted.data.cancel().catch(() => undefined);
      return decrypted.filename;
    } catch (error) {
      if (error instanceof NotForThisKey)
        throw ImportsException.file(
          ImportsErrorCode.WrongKey,
          "The file is not encrypted to this tenant's import key (GET /tokens/imports/key).",
        );
      if (error instanceof NotAMessage)
        throw ImportsException.file(ImportsErrorCode.NotAMessage, 'The body is not an OpenPGP message.');
      throw error;
    }
  }

  async get(who: Principal, id: string): Promise<ImportDto> {
    const row = await this.imports.find(who.tenantId, id);
    if (!row) throw ImportsException.notFound();
    return importDto(row);
  }

  async results(who: Principal, id: string, query: ImportResultsQueryDto): Promise<ImportResultPageDto> {
    if (!(await this.imports.find(who.tenantId, id))) throw ImportsException.notFound();
    const { rows, total } = await this.imports.results(who.tenantId, id, offsetOf(query));
    return offsetPage(rows.map(resultDto), total, query);
  }
}
