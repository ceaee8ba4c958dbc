/**
 * Waits until `check` holds (it may be async, e.g. a database read), re-checking every 20 ms;
 * fails with `message` after `timeoutMs`.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  message: string,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${message}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
