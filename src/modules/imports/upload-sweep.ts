import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { removeFile } from './import-file';

/**
 * An upload not written to for this long, with no job waiting for it, was left by a process that died
 * while it was arriving or before its job committed (or after its job ended, before the file was deleted).
 */
export const ABANDONED_UPLOAD_MS = 60 * 60_000;

/** `<tenant id>.<import id>.pgp`, as `ImportsService.fileOf` names an upload. */
const UPLOAD_NAME = /^([0-9a-f-]{36})\.([0-9a-f-]{36})\.pgp$/;

/**
 * Deletes the uploads of `directory` that no job waits for (`waiting`: a pending or processing job of that
 * tenant and id) and that nothing has written to for `ABANDONED_UPLOAD_MS` at `now` (an upload under way
 * is written to as it arrives). Answers how many were deleted.
 */
export async function sweepUploads(
  directory: string,
  now: Date,
  waiting: (tenantId: string, id: string) => Promise<boolean>,
): Promise<number> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let removed = 0;
  for (const name of names) {
    const match = UPLOAD_NAME.exec(name);
    if (!match) continue;
    const path = join(directory, name);
    const modified = await stat(path).then(
      (info) => info.mtimeMs,
      () => undefined,
    );
    if (modified === undefined || now.getTime() - modified < ABANDONED_UPLOAD_MS) continue;
    if (await waiting(match[1], match[2])) continue;
    await removeFile(path);
    removed++;
  }
  return removed;
}
