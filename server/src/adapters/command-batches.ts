/**
 * The most messages or appends one Redis command carries. A turn may hold tens of thousands (many
 * clients bursting while their room loads), past V8's limit on the arguments of one spread call.
 */
export const MAX_ITEMS_PER_COMMAND = 1_000

/** `items` in runs of at most `size`, in order (the array itself when it fits in one). */
export function chunks<T>(items: T[], size: number): T[][] {
  if (items.length <= size) return [items]
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
