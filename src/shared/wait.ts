/**
 * Waits for `work` to settle, but at most `ms`: for shutdowns, which must not hang on a command
 * a stalled Redis never answers (closing the connections then ends it). Never rejects.
 */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([
      work.then(
        () => undefined,
        () => undefined,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
