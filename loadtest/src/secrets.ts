import { readFileSync } from 'node:fs'
import { UsageError } from './usage-error.js'

/**
 * A secret the harness needs: read from an environment variable or a file, never from the command
 * line, which npm echoes (`npm run loadtest -- …` prints it) and `ps` shows to every local user.
 */
export interface SecretSource {
  /** The option that once took the value itself: now refused with a pointer to the others. */
  refused: string
  /** The option naming a file that holds the value (one trailing newline ignored). */
  fileOption: string
  envVar: string
  /** Shorter is refused; `why` says where the floor comes from. */
  minLength: number
  why: string
}

export const TOKEN_SECRET: SecretSource = {
  refused: 'token-secret',
  fileOption: 'token-secret-file',
  envVar: 'LOADTEST_TOKEN_SECRET',
  minLength: 32,
  why: 'the server requires as much',
}

export const JOIN_TOKEN: SecretSource = {
  refused: 'join-token',
  fileOption: 'join-token-file',
  envVar: 'LOADTEST_JOIN_TOKEN',
  minLength: 16,
  why: 'agents present it to get tokens',
}

const SOURCES = [TOKEN_SECRET, JOIN_TOKEN]

/** Throws a UsageError (which never repeats the value) when argv carries a secret itself. */
export function refuseSecretsInArguments(argv: string[]): void {
  for (const source of SOURCES) {
    const flag = `--${source.refused}`
    if (argv.some((arg) => arg === flag || arg.startsWith(`${flag}=`))) {
      throw new UsageError(
        `${flag} is not accepted: the command line is echoed by npm and visible to ps. ` +
          `Set ${source.envVar}, or pass --${source.fileOption} FILE`,
      )
    }
  }
}

/** The secret from its file option if given, else its environment variable; undefined if neither. */
export function readSecret(
  source: SecretSource,
  values: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): string | undefined {
  const secret = fromFileOrEnv(source, values, env)
  if (secret !== undefined && secret.length < source.minLength) {
    throw new UsageError(
      `${source.envVar} / --${source.fileOption}: at least ${source.minLength} characters (${source.why})`,
    )
  }
  return secret
}

function fromFileOrEnv(
  source: SecretSource,
  values: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): string | undefined {
  const file = values[source.fileOption]
  if (typeof file === 'string') {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      throw new UsageError(
        `--${source.fileOption}: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`,
      )
    }
    const secret = text.replace(/\r?\n$/, '')
    if (!secret) throw new UsageError(`--${source.fileOption}: ${file} is empty`)
    return secret
  }
  return env[source.envVar] || undefined
}
