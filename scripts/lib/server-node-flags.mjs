// The V8 flags the sync server runs with under `npm start`, and in the bench's rows that run it so.
// `--max-semi-space-size=16` caps V8's young generation at 2 × 16 MiB. Left to itself, V8 grows it
// with the allocation rate to 2 × 32 MiB (Node runs without pointer compression, which doubles
// V8's 32 MiB cap): 64 MiB of heap that only holds each message's short-lived garbage, about 64 KiB
// per user at 1,000 users, where the live state of a connection is about 9 KiB. Capped, a scavenge
// runs twice as often and still finds that garbage dead (a presence state lives about 200 ms), so
// no more of it is promoted (BENCHMARKS.md, "2026-11-26, issue #37, single server"). Smaller caps
// (4 or 8 MiB) promote more and cost more memory, not less. A NODE_OPTIONS that sets the young
// generation itself wins: its flags are then left out.

export const SERVER_NODE_FLAGS = ['--max-semi-space-size=16']

/** The flags to start the server with, less those NODE_OPTIONS (`nodeOptions`) already decides. */
export function serverNodeFlags(nodeOptions = '') {
  return /semi-space/.test(nodeOptions) ? [] : SERVER_NODE_FLAGS
}

// glibc's malloc, which holds every Buffer's bytes, serves a block of 128 KiB or more with a mapping
// of its own, returned to the system when freed, until it frees one: from then on blocks up to that
// size (16 MiB, after one big message) come from its heaps, which give back only their top. Small
// blocks that stay (a room's state, a socket's buffers) then pin the freed megabytes around them: a
// big update, a big room's join or a document read left the server's RSS 100–200 MiB higher for
// good. A fixed threshold keeps every big block in its own mapping (BENCHMARKS.md, "2026-12-07,
// late night (issue #47)": the attack mix's peak RSS 718–769 MiB with it, 816–890 without). Set in
// the sync server's image too; a value of the environment's own wins.
export const SERVER_MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '131072' }

/**
 * `env` with the malloc setting added unless it has one.
 * @template {Record<string, string | undefined>} Env
 * @param {Env} env
 * @returns {Env}
 */
export function serverEnv(env) {
  return { ...SERVER_MALLOC_ENV, ...env }
}
