/** A bad command line: the CLI prints its one-line message and exits 2. */
export class UsageError extends Error {}
