import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Arg, Reply } from "../redis/resp.js";
import { assembleLua, type AssembledLua } from "./assemble.js";

/** Where a script runs: a pool, a connection, anything that sends one command and answers. */
export interface ScriptTarget {
  exec(argv: readonly Arg[]): Promise<Reply>;
}

/**
 * One Lua script of either service, loaded from its `.lua` file (assembled with its includes,
 * see assemble.ts) and called by SHA.
 *
 * - `run` sends EVALSHA; on NOSCRIPT (a fresh, restarted or flushed Redis) it loads the script
 *   once with SCRIPT LOAD, however many callers hit NOSCRIPT at once, and repeats the call.
 * - `command` builds the call for a pipeline or transaction, where the caller decides: by SHA
 *   when Redis is known to hold the script, else with the text (EVAL also caches it).
 * A script whose shebang has `flags=no-writes` is called with EVAL_RO / EVALSHA_RO, so a
 * read-only ACL user may run it.
 *
 * Scripts are read relative to the calling module (`new URL("./lua/x.lua", import.meta.url)`);
 * the build copies the `.lua` files next to the compiled modules in dist/.
 */
export class LuaScript {
  readonly name: string;
  readonly text: string;
  readonly sha: string;
  readonly keys: readonly string[] | undefined;
  readonly readOnly: boolean;
  private readonly loading = new WeakMap<ScriptTarget, Promise<Reply>>();
  /** Loads completed per target: a NOSCRIPT for a call sent before the last load needs none. */
  private readonly loads = new WeakMap<ScriptTarget, number>();

  constructor(readonly source: AssembledLua) {
    this.name = source.name;
    this.text = source.text;
    this.sha = createHash("sha1").update(this.text).digest("hex");
    this.keys = source.keys;
    const shebang = /^#!lua\b(.*)/.exec(this.text)?.[1] ?? "";
    this.readOnly = /\bflags=\S*\bno-writes\b/.test(shebang);
  }

  static fromFile(file: string | URL): LuaScript {
    return new LuaScript(assembleLua(typeof file === "string" ? file : fileURLToPath(file)));
  }

  /** The EVALSHA (`by` = "sha") or EVAL (`by` = "text") command calling the script. */
  command(by: "sha" | "text", keys: readonly Arg[], args: readonly Arg[]): Arg[] {
    const ro = this.readOnly ? "_RO" : "";
    const head = by === "sha" ? [`EVALSHA${ro}`, this.sha] : [`EVAL${ro}`, this.text];
    return [...head, String(keys.length), ...keys, ...args];
  }

  /** Calls the script by SHA, loading it on NOSCRIPT; Redis's reply, error replies included. */
  async run(target: ScriptTarget, keys: readonly Arg[], args: readonly Arg[]): Promise<Reply> {
    if (this.keys && keys.length !== this.keys.length) {
      throw new Error(
        `script ${this.name} takes ${this.keys.length} keys (${this.keys.join(" ")})`,
      );
    }
    const call = this.command("sha", keys, args);
    const loadsBefore = this.loads.get(target) ?? 0;
    const reply = await target.exec(call);
    if (!isNoScript(reply)) return reply;
    // Another caller's load may have finished while this call was in flight: just repeat it.
    if ((this.loads.get(target) ?? 0) === loadsBefore) {
      const loaded = await this.load(target);
      if (loaded.kind === "error") return loaded;
    }
    return target.exec(call);
  }

  private load(target: ScriptTarget): Promise<Reply> {
    let pending = this.loading.get(target);
    if (!pending) {
      pending = target.exec(["SCRIPT", "LOAD", this.text]);
      this.loading.set(target, pending);
      const forget = () => this.loading.delete(target);
      const count = (reply: Reply) => {
        forget();
        if (reply.kind !== "error") this.loads.set(target, (this.loads.get(target) ?? 0) + 1);
      };
      pending.then(count, forget);
    }
    return pending;
  }
}

/** Redis no longer (or not yet) holds the script a call named by SHA. */
export function isNoScript(reply: Reply): boolean {
  return reply.kind === "error" && reply.value.startsWith("NOSCRIPT");
}
