import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { Principal } from "../databases/database.js";
import { namesWith } from "../commands/traits.js";

/**
 * FCALL_RO as Upstash runs it: a function that is not declared `no-writes` but only reads runs
 * (Redis refuses it outright), and one that writes is refused with "Write commands are not
 * allowed from read-only scripts". Redis's refusal is retried as FCALL on the read-only token's
 * ACL user, whose rules refuse every write command the function makes. Only for the standard and
 * read-only tokens (an ACL token's own key rules must keep applying); not inside /multi-exec
 * (nothing can be retried there); in a /pipeline the retry runs after the batch's other commands.
 */
const WRITE_FLAG_REFUSAL = "ERR Can not execute a script with write flag using *_ro command.";
const ACL_REFUSAL = /The user executing the script can't run this command or subcommand/;
const READ_ONLY_REFUSAL = "Write commands are not allowed from read-only scripts";

const ONE_WATCHED: ReadonlySet<number> = new Set([0]);

export async function retryReadOnlyFcalls(
  p: Principal,
  commands: readonly Arg[][],
  replies: (Reply | undefined)[],
): Promise<void> {
  if (p.role === "acl") return;
  for (let i = 0; i < replies.length; i++) {
    const reply = replies[i];
    // Gateway-handled commands' replies are not there yet (undefined).
    if (reply?.kind !== "error" || reply.value !== WRITE_FLAG_REFUSAL) continue;
    const argv = commands[i] as Arg[];
    if (argv[0]?.toString().toLowerCase() !== "fcall_ro") continue;
    // A script call like any other: its wait counts against the script time limit (`watched`),
    // its reply against the reply budget, its memory is watched (script-memory.ts).
    const done = p.db.scriptCallStarted();
    const {
      replies: [again],
    } = await p.db
      .poolFor({ db: p.db, role: "readonly" })
      .exchange([["FCALL", ...argv.slice(1)]], {
        watched: ONE_WATCHED,
        maxReplyBytes: Math.max(0, p.db.maxReplyBytes),
      })
      .finally(done);
    if (again === undefined) continue;
    replies[i] =
      again.kind === "error"
        ? { kind: "error", value: again.value.replace(ACL_REFUSAL, READ_ONLY_REFUSAL) }
        : again;
  }
}

/** What the read-only token may call that runs Lua; EVAL and EVALSHA its ACL user refuses. */
const READ_ONLY_SCRIPT_CALLS = namesWith("read-only-script");

/**
 * Why the read-only token may not run this, if it may not: its FCALL (the token's ACL user may
 * run FCALL for the retry above, the token itself not: refused with the text Redis's ACL would
 * give), and any script while STASHD_KV_READONLY_SCRIPTS is off: one Lua call can hold Redis past
 * every time limit (a backtracking pattern or a huge string.rep is one C call that SCRIPT KILL
 * cannot stop), which a token given to browsers must not be able to do.
 */
export function readOnlyFcallRefusal(p: Principal, argv: readonly Arg[]): string | undefined {
  if (p.role !== "readonly") return undefined;
  const name = argv[0]?.toString().toLowerCase();
  if (name === "fcall") {
    return "NOPERM this user has no permissions to run the 'fcall' command or its subcommand";
  }
  if (name !== undefined && READ_ONLY_SCRIPT_CALLS.has(name) && !p.db.readonlyScripts) {
    return `NOPERM the read-only token may not run scripts on this server ('${name}'): STASHD_KV_READONLY_SCRIPTS is off`;
  }
  return undefined;
}
