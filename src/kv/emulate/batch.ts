import type { RedisBackend } from "../../shared/redis/backend.js";
import { isNoScript } from "../../shared/lua/script.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { CommandTable } from "../commands/policy.js";
import type { EmulationOptions } from "./emulation.js";
import { findEmulation, mayEmulate, routeEmulated, type EmulatedRoute } from "./route.js";

/**
 * Emulated commands (route.ts: the JSON group, hash-field expiration, newer stream and BITOP
 * commands) within one pipeline or transaction. `rewrite` maps each to its script call; `settle`
 * fixes up the replies: a NOSCRIPT (script cache flushed since) is retried with the script text,
 * and ACL refusals name the command the client sent rather than EVALSHA.
 *
 * Which scripts a backend already holds is remembered per pool owner (the database): until a
 * script is known to be cached, calls carry its text (EVAL), so a pipeline never reorders. A
 * retry after NOSCRIPT runs after the rest of its pipeline (only after a SCRIPT FLUSH).
 *
 * In a transaction (`transaction` = true) nothing can be retried inside EXEC, so the first call of
 * each script carries its text and later calls in the same MULTI use the SHA: they run after it,
 * on the same connection, when Redis already holds the script.
 */
const cached = new WeakMap<object, Set<string>>();

export class EmulationBatch {
  private readonly routes = new Map<number, EmulatedRoute>();
  private readonly known: Set<string>;
  private readonly inBatch = new Set<string>();

  constructor(
    owner: object,
    private readonly table: CommandTable,
    private readonly options: EmulationOptions,
    private readonly transaction = false,
  ) {
    let known = cached.get(owner);
    if (!known) cached.set(owner, (known = new Set()));
    this.known = known;
  }

  /** Whether `rewrite` may map a command of this name (false: it returns undefined for it). */
  mayRewrite(name: Arg): boolean {
    return mayEmulate(name, this.table, this.options);
  }

  /** The script call for command i, an error reply, or undefined when argv runs natively. */
  rewrite(argv: Arg[], i: number): Arg[] | Reply | undefined {
    const found = findEmulation(argv, this.table, this.options);
    if (found === undefined) return undefined;
    const [emulation, name] = found;
    const probe = routeEmulated(emulation, name, argv, "sha");
    if (!("argv" in probe)) return probe;
    const sha = probe.script.sha;
    const cachedNow = this.transaction ? this.inBatch.has(sha) : this.known.has(sha);
    const route = cachedNow
      ? probe
      : (routeEmulated(emulation, name, argv, "text") as EmulatedRoute);
    this.inBatch.add(sha);
    this.routes.set(i, route);
    return route.argv;
  }

  /** Whether commands were rewritten whose replies `settle` has not seen yet. */
  get pending(): boolean {
    return this.routes.size > 0;
  }

  /**
   * Post-processes the replies of the commands rewritten since the last call (indexed like the
   * commands; a sliced pipeline calls it after each slice); retries NOSCRIPT items on `pool`.
   */
  async settle(replies: Reply[], commands: readonly Arg[][], pool: RedisBackend): Promise<void> {
    for (const [i, route] of this.routes) {
      if (replies[i] === undefined) continue;
      this.routes.delete(i);
      let reply = replies[i] as Reply;
      if (!this.transaction && isNoScript(reply)) {
        this.known.delete(route.script.sha);
        const again = routeEmulated(route.emulation, route.name, commands[i] as Arg[], "text");
        reply = "argv" in again ? await pool.exec(again.argv) : again;
      }
      if (reply.kind !== "error" || !reply.value.startsWith("NOPERM")) {
        this.known.add(route.script.sha);
      }
      replies[i] = renamed(reply, route.name);
    }
  }

  /** Renames ACL refusals in replies laid out with `offset` (1 for MULTI's queueing replies). */
  rename(replies: Reply[], offset: number): void {
    for (const [i, route] of this.routes) {
      const reply = replies[i + offset];
      if (reply) replies[i + offset] = renamed(reply, route.name);
    }
  }
}

function renamed(reply: Reply, name: string): Reply {
  if (reply.kind !== "error" || !reply.value.startsWith("NOPERM")) return reply;
  return { kind: "error", value: reply.value.replace(/'(evalsha|eval)(_ro)?'/i, `'${name}'`) };
}
