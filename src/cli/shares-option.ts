/**
 * `--shares-from DIR`, the same on every command that may need the key under split (apart from
 * cli-shares.ts, which the commands load only when they run).
 */
export const SHARES_FROM = {
  flags: '--shares-from <dir>',
  description:
    "KEY_PROVIDER=split: the custodians' shares, each the first line of a *.txt file in DIR (default: standard input, one line each)",
};
