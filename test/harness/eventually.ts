/**
 * Retries an assertion until it passes or the timeout runs out, then rethrows its last error.
 * Use instead of sleeping for "something will happen soon".
 */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  { timeoutMs = 5_000, intervalMs = 10 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}
