import { readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { AppError } from "./shared/errors.js";
import { readJsonFile, withFileLock, writeJsonFile } from "./shared/files.js";

/**
 * `<dataDir>/runtime.json`: what a running stashd actually bound (ports chosen with 0 included),
 * so `stashd credentials` prints the real URLs. Removed on clean shutdown; one left by a killed
 * process is ignored (its owner is checked like the instance lock's).
 */
export interface RuntimeInfo {
  pid: number;
  /** Absent when the process runs without the KV gateway (start({ services })). */
  kvUrl?: string;
  queueUrl?: string;
  adminUrl?: string;
  startedAt: string;
}

/**
 * `<dataDir>/instance.lock`: which process owns the data dir. Held for the life of a stashd
 * process, so two never run managed redis-servers on the same files.
 */
interface LockOwner {
  pid: number;
  host: string;
  /** Kernel start time of the owner (Linux), so a recycled pid is not taken for the owner. */
  processStart?: string;
  startedAt: string;
}

/** Data dirs locked by this process (a second `start()` in the same process is refused too). */
const heldHere = new Set<string>();

export function runtimeFile(dataDir: string): string {
  return path.join(dataDir, "runtime.json");
}

export function lockFile(dataDir: string): string {
  return path.join(dataDir, "instance.lock");
}

export function writeRuntime(dataDir: string, info: RuntimeInfo): void {
  writeJsonFile(runtimeFile(dataDir), info);
}

/** The runtime info of a live stashd on this data dir, or undefined. */
export function readRuntime(dataDir: string): RuntimeInfo | undefined {
  const info = readQuietly(runtimeFile(dataDir)) as RuntimeInfo | undefined;
  const owner = readQuietly(lockFile(dataDir)) as LockOwner | undefined;
  if (!info || !owner || owner.pid !== info.pid || !ownerAlive(owner, dataDir)) return undefined;
  return info;
}

/**
 * Takes the data dir for this process, or throws naming the running owner and its URLs. A lock
 * whose owner is gone (SIGKILL, crash, reboot) is taken over; the check-and-take runs under the
 * registry-style file lock, so two processes starting at once cannot both win.
 */
export function acquireInstanceLock(dataDir: string): () => void {
  const key = path.resolve(dataDir);
  const file = lockFile(dataDir);
  withFileLock(file, () => {
    const owner = readQuietly(file) as LockOwner | undefined;
    if (owner && (heldHere.has(key) || ownerAlive(owner, dataDir))) {
      throw new AppError("conflict", alreadyRunning(dataDir, owner));
    }
    const me: LockOwner = {
      pid: process.pid,
      host: os.hostname(),
      startedAt: new Date().toISOString(),
    };
    const start = processStart(process.pid);
    if (start !== undefined) me.processStart = start;
    writeJsonFile(file, me);
    heldHere.add(key);
  });
  let released = false;
  return () => {
    if (released) return;
    released = true;
    heldHere.delete(key);
    withFileLock(file, () => {
      const owner = readQuietly(file) as LockOwner | undefined;
      if (owner?.pid === process.pid) rmSync(file, { force: true });
    });
  };
}

function alreadyRunning(dataDir: string, owner: LockOwner): string {
  const info = readQuietly(runtimeFile(dataDir)) as RuntimeInfo | undefined;
  const urls =
    info?.pid === owner.pid
      ? [
          info.kvUrl && `KV ${info.kvUrl}`,
          info.queueUrl && `queue ${info.queueUrl}`,
          info.adminUrl && `admin ${info.adminUrl}`,
        ]
          .filter(Boolean)
          .join(", ")
      : "still starting";
  const where = owner.host === os.hostname() ? "" : ` on host ${owner.host}`;
  return (
    `data dir ${dataDir} is in use by a running stashd (pid ${owner.pid}${where}; ${urls}). ` +
    `Stop it first, or use another --data-dir. If that process is gone, delete ${lockFile(dataDir)}.`
  );
}

/** Whether the recorded owner still runs: same pid and (on Linux) same kernel start time. */
function ownerAlive(owner: LockOwner, dataDir: string): boolean {
  if (owner.host !== os.hostname()) return true; // cannot tell: a shared filesystem
  if (owner.pid === process.pid) return heldHere.has(path.resolve(dataDir));
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  const start = processStart(owner.pid);
  return owner.processStart === undefined || start === undefined || start === owner.processStart;
}

/** Field 22 of /proc/PID/stat (start time in clock ticks since boot); undefined off Linux. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces; the fields after its ")" are plain.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

function readQuietly(file: string): unknown {
  try {
    return readJsonFile(file);
  } catch {
    return undefined;
  }
}
