/** A refusal to show the operator as it is (one line, no stack). */
export class CliError extends Error {}
