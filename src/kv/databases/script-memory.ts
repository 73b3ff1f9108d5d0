import { closeSync, openSync, readFileSync, readSync } from "node:fs";

/** What the watch reads of its database, at each use (the registry may change the limit). */
export interface MemoryWatchedServer {
  /** The managed redis-server's pid file (it changes at each restart). */
  readonly pidFile: string;
  /** The database's max data size (Redis's `maxmemory`), in bytes. */
  maxDataBytes(): number;
}

export interface ScriptMemoryOptions {
  /** How often the server's memory is read while a script call is in flight. */
  checkMs: number;
  /** How far one script may grow the server past its max data size; 0: derived (`growthFor`). */
  maxGrowthBytes: number;
  /** Called at each check that finds the server past its bound, until the calls end. */
  onOverrun(overrun: MemoryOverrun): void;
  /**
   * Called when a script call is sent to a server that already holds more than the max data size
   * plus twice the growth: memory kept from earlier calls (a function library's tables), which
   * no call's bound sees since each is measured from what the server held when it was sent.
   */
  onHeld(overrun: MemoryOverrun): void;
}

export interface MemoryOverrun {
  rssBytes: number;
  boundBytes: number;
}

/** The derived growth: a quarter of the max data size, at least 64 MiB. */
export function growthFor(maxDataBytes: number): number {
  return Math.max(64 * 1024 * 1024, Math.floor(maxDataBytes / 4));
}

const PAGE_BYTES = 4096;
/**
 * A reading this recent serves as a new call's baseline: at thousands of script calls a second
 * (a rate limiter's EVALSHA per request) most calls then read nothing. Memory freed in between
 * loosens the bound by that much, memory grown tightens it.
 */
const READING_FRESH_MS = 5;

/**
 * Holds a managed database's scripts to its memory limit while they run. Redis checks
 * `maxmemory` when a script starts and before its first write, never after: a script that starts
 * under the limit may write, and grow its Lua heap, without bound until the time limit ends it
 * (gigabytes in the 5 s it may run). So while any script call is in flight, the server's resident
 * memory (/proc/<pid>/statm) is read every `checkMs`; past
 *
 *   max(resident memory when the oldest call in flight was sent, max data size) + growth
 *
 * `onOverrun` ends the script (script-killer.ts: SCRIPT KILL, or SHUTDOWN NOSAVE when it wrote,
 * which drops its writes). Measuring from the oldest call keeps a busy database's fragmentation
 * (resident memory above its data) from counting as one script's growth: a stream of short
 * calls always has a recent oldest call, a long script stays the oldest while it runs.
 *
 * What a call starts from is trusted up to one growth above the max data size, and a call sent
 * to a server past twice the growth calls `onHeld`: a function library keeps its Lua tables
 * between calls and Redis counts none of it against `maxmemory`, so calls that each grew less
 * than the growth held the server past any bound (120 MiB in 30 calls against an 8 MiB limit,
 * without end). Honest fragmentation rarely reaches it; a restart (AOF reload) compacts it.
 *
 * Cost per script call: a Set entry, and a pread of an open /proc file (about 2 µs) unless one
 * was made in the last READING_FRESH_MS; the timer stops at the first check that finds no call.
 */
export class ScriptMemoryWatch {
  private readonly inFlight = new Set<{ baseline: number }>();
  private timer: NodeJS.Timeout | undefined;
  private fd: number | undefined;
  private readonly buffer = Buffer.alloc(128);
  private closed = false;
  /** The last reading and when it was made (performance.now()). */
  private lastBytes = 0;
  private lastAt = -Infinity;
  /**
   * The first reading of the running server, made before any call this watch saw ran on it: its
   * data as loaded. A limit lowered below what a database holds (`stashd db update`) then raises
   * the ceiling instead of restarting the server at every script call.
   */
  private firstBytes: number | undefined;

  constructor(
    private readonly server: MemoryWatchedServer,
    private readonly options: ScriptMemoryOptions,
  ) {}

  /** Marks a script call sent; the returned function marks it answered (idempotent). */
  started(): () => void {
    if (this.closed) return noop;
    const now = performance.now();
    const baseline = now - this.lastAt < READING_FRESH_MS ? this.lastBytes : this.residentBytes();
    this.checkHeld(baseline);
    const entry = { baseline };
    this.inFlight.add(entry);
    if (this.timer === undefined) {
      this.timer = setInterval(this.check, this.options.checkMs);
      this.timer.unref();
    }
    return () => void this.inFlight.delete(entry);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    this.inFlight.clear();
    this.closeFile();
  }

  private readonly check = (): void => {
    const oldest = this.inFlight.values().next().value;
    if (oldest === undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const rss = this.residentBytes();
    const limit = this.server.maxDataBytes();
    if (limit <= 0 || rss <= 0) return;
    const growth = this.growth(limit);
    const start = Math.min(Math.max(oldest.baseline, limit), this.floor(limit) + growth);
    const bound = start + growth;
    if (rss > bound) this.options.onOverrun({ rssBytes: rss, boundBytes: bound });
  };

  /** `onHeld` when a call is sent to a server past the max data size plus twice the growth. */
  private checkHeld(rss: number): void {
    const limit = this.server.maxDataBytes();
    if (limit <= 0 || rss <= 0) return;
    const ceiling = this.floor(limit) + 2 * this.growth(limit);
    if (rss > ceiling) this.options.onHeld({ rssBytes: rss, boundBytes: ceiling });
  }

  /** The max data size, or what the server held when first read if that is more. */
  private floor(limit: number): number {
    return Math.max(limit, this.firstBytes ?? 0);
  }

  private growth(limit: number): number {
    return this.options.maxGrowthBytes || growthFor(limit);
  }

  /** The server's resident memory now; 0 when it cannot be read (not running, restarting). */
  private residentBytes(): number {
    for (let attempt = 0; attempt < 2; attempt++) {
      const fd = this.fd ?? this.openFile();
      if (fd === undefined) return 0;
      try {
        const n = readSync(fd, this.buffer, 0, this.buffer.length, 0);
        // statm: "size resident shared text lib data dt", in pages.
        const resident = Number(this.buffer.toString("latin1", 0, n).split(" ")[1]);
        if (Number.isFinite(resident)) {
          this.lastBytes = resident * PAGE_BYTES;
          this.firstBytes ??= this.lastBytes;
          this.lastAt = performance.now();
          return this.lastBytes;
        }
      } catch {
        // The process ended (a restart): open the new one's file once.
      }
      this.closeFile();
    }
    return 0;
  }

  private openFile(): number | undefined {
    try {
      const pid = Number(readFileSync(this.server.pidFile, "latin1").trim());
      if (!Number.isInteger(pid) || pid <= 0) return undefined;
      this.fd = openSync(`/proc/${pid}/statm`, "r");
      this.firstBytes = undefined;
      return this.fd;
    } catch {
      return undefined;
    }
  }

  private closeFile(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = undefined;
  }
}

function noop(): void {}
