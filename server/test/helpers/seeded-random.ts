import { randomInt } from 'node:crypto'

export interface SeededRandom {
  seed: number
  /** Uniform in [0, 1), the same sequence for the same seed. */
  random(): number
  /** Wraps a failure so it names the seed and the command that replays it. */
  replayable(error: unknown, testFile: string): Error
}

/**
 * A seed from the environment variable `variable` (to replay a failed run), else a fresh one, and
 * a small PRNG on it (`randomFromSeed`).
 */
export function seededRandom(variable: string): SeededRandom {
  const seed = Number(process.env[variable] ?? randomInt(2 ** 31))
  return {
    seed,
    random: randomFromSeed(seed),
    replayable: (error, testFile) =>
      new Error(
        `failed with seed ${seed} (replay: ${variable}=${seed} npm test -- ${testFile}): ${(error as Error).message}`,
        { cause: error },
      ),
  }
}

/** Uniform numbers in [0, 1), the same sequence for the same seed (mulberry32). */
export function randomFromSeed(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let x = Math.imul(state ^ (state >>> 15), state | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}
