import type { Logger } from "../../shared/log.js";
import type { RedisBackend } from "../../shared/redis/backend.js";

/** The derived bound: an eighth of the max data size, at least 1 MiB. */
export function scriptCacheBoundFor(maxDataBytes: number): number {
  return Math.max(1024 * 1024, Math.floor(maxDataBytes / 8));
}

/**
 * Bounds a managed database's script cache. Redis keeps the body of every distinct script that
 * EVAL or SCRIPT LOAD was sent (7.0 never evicts one), neither command is refused at `maxmemory`,
 * and the cache counts in `used_memory`: 800 EVALs of distinct 200 KB bodies held 175 MiB of
 * scripts in a 64 MiB database, whose writes were then all refused (without end: the loop goes
 * on). So the script sources sent are counted, and each time they add up to a quarter of the
 * bound, INFO memory is read: past the bound (`scriptCacheBoundFor`, of the max data size read
 * at each use) the cache is emptied with SCRIPT FLUSH ASYNC. A client's next EVALSHA then gets
 * NOSCRIPT, once, and sends the script again (the SDKs do so by themselves; stashd's own scripts
 * too); FUNCTION libraries are not touched.
 *
 * Cost: an addition per script source sent; an INFO memory per quarter of the bound of sources
 * (every 2 MiB of EVAL bodies, on a 64 MiB database).
 */
export class ScriptCacheBound {
  private sinceCheck = 0;
  private checking = false;
  /** SCRIPT FLUSHes made (tests, logs). */
  flushes = 0;

  constructor(
    private readonly admin: Pick<RedisBackend, "exec">,
    private readonly maxDataBytes: () => number,
    private readonly logger: Logger,
  ) {}

  /** Counts `bytes` of script source sent to the server; checks the cache past a quarter bound. */
  sent(bytes: number): void {
    this.sinceCheck += bytes;
    const bound = scriptCacheBoundFor(this.maxDataBytes());
    if (this.checking || this.sinceCheck < bound / 4) return;
    this.sinceCheck = 0;
    this.checking = true;
    this.check(bound)
      .catch((err: unknown) => this.logger.warn("cannot check the script cache", { error: err }))
      .finally(() => (this.checking = false));
  }

  private async check(bound: number): Promise<void> {
    const info = await this.admin.exec(["INFO", "memory"]);
    const text = info.kind === "bulk" ? info.value.toString() : "";
    const cached = Number(/^used_memory_scripts_eval:(\d+)/m.exec(text)?.[1] ?? 0);
    if (cached <= bound) return;
    const reply = await this.admin.exec(["SCRIPT", "FLUSH", "ASYNC"]);
    if (reply.kind === "error") throw new Error(reply.value);
    this.flushes++;
    this.logger.info("script cache emptied (SCRIPT FLUSH ASYNC): past its bound", {
      cachedBytes: cached,
      boundBytes: bound,
    });
  }
}
