import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";

/** Writes JSON atomically (temp file + rename) with owner-only permissions: these hold secrets. */
export function writeJsonFile(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** Parsed JSON of a file, or undefined when it does not exist. */
export function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  return JSON.parse(text);
}

/** A lock older than this was left by a writer that died holding it (it is held for microseconds). */
const STALE_LOCK_MS = 10_000;
/** How long a writer waits for another's lock before giving up with an error. */
const LOCK_WAIT_MS = 5_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Runs a read-modify-write of `file` under an exclusive lock (`<file>.lock`, created with O_EXCL),
 * so two writers (the CLI and a running server, two CLI calls) never lose each other's change:
 * each rewrites the whole file from what it read. Synchronous, like the writes it guards; a
 * waiting writer sleeps 5 ms at a time.
 */
export function withFileLock<T>(file: string, fn: () => T): T {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const lock = `${file}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      if (lockAge(lock) > STALE_LOCK_MS) rmSync(lock, { force: true });
      else if (Date.now() > deadline) throw new Error(`${lock} is held by another writer`);
      else Atomics.wait(pause, 0, 0, 5);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

function lockAge(lock: string): number {
  try {
    return Date.now() - statSync(lock).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * Identity of a file's current version, for pollers that re-read a file when it changed. mtime
 * alone can repeat within the clock's resolution; the inode changes on every atomic replace
 * (`writeJsonFile`) and the size catches edits in place. "missing" when there is no file.
 */
export function fileStamp(file: string): string {
  try {
    const st = statSync(file);
    return `${st.mtimeMs}:${st.ino}:${st.size}`;
  } catch {
    return "missing";
  }
}
