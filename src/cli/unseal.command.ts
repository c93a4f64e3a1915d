import { Command, CommandRunner, Option } from 'nest-commander';
import { AppConfig } from '../config/app-config';
import { CliError } from './admin-client';

/** The words printed for a refused share, by the problem's code. */
const WHY: Record<string, string> = {
  share_of_another_key: 'another key',
  share_corrupted: 'corrupted',
  share_already_entered: 'already entered',
};

/** Reads standard input to its end (one share line; a terminal ends it with Ctrl-D). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

@Command({
  name: 'unseal',
  description:
    "Enter one custodian's share (read from standard input) into a sealed server (KEY_PROVIDER=split), or into an unsealed one a share of a newer ceremony's key (rotation); prints `<k> of <M>` or `unsealed`",
})
export class UnsealCommand extends CommandRunner {
  constructor(private readonly config: AppConfig) {
    super();
  }

  @Option({ flags: '--url <url>', description: 'The instance to unseal (default http://127.0.0.1:$PORT)' })
  parseUrl(value: string): string {
    return value;
  }

  @Option({ flags: '--reset', description: 'Forget every share entered into the instance so far' })
  parseReset(): boolean {
    return true;
  }

  async run(_args: string[], options: { url?: string; reset?: boolean }): Promise<void> {
    const base = (options.url ?? `http://127.0.0.1:${this.config.PORT}`).replace(/\/+$/, '');
    const body = options.reset ? undefined : JSON.stringify({ share: (await readStdin()).trim() });
    let res: Response;
    try {
      res = await fetch(`${base}/sys/unseal${options.reset ? '/reset' : ''}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    } catch {
      throw new CliError(`No server answers at ${base}.`);
    }
    const answer = (await res.json().catch(() => ({}))) as {
      sealed?: boolean;
      progress?: number;
      threshold?: number;
      kek_version?: string;
      adopting?: string;
      code?: string;
      detail?: string;
    };
    if (!res.ok) {
      const why = answer.code ? WHY[answer.code] : undefined;
      throw new CliError(
        why ? `refused: ${why}. ${answer.detail ?? ''}`.trim() : (answer.detail ?? `HTTP ${res.status}`),
      );
    }
    // The count on standard output; which key it is about on standard error.
    if (answer.sealed || answer.adopting) {
      process.stdout.write(`${answer.progress} of ${answer.threshold}\n`);
      process.stderr.write(
        answer.sealed
          ? `Shares of key ${answer.kek_version}.\n`
          : `Shares of key ${answer.adopting}, made after ${answer.kek_version}, which the server serves under: at ${answer.threshold} it adopts it.\n`,
      );
      return;
    }
    process.stdout.write('unsealed\n');
    process.stderr.write(`The server serves under key ${answer.kek_version}.\n`);
  }
}
