import { useState } from "preact/hooks";
import { kvExec, type KvResult } from "../api.js";
import { messageOf, Pre } from "../ui.js";

interface Entry {
  id: number;
  line: string;
  token: string;
  output: unknown;
  failed: boolean;
}

/**
 * Splits a command line into arguments: whitespace separates, "double" or 'single' quotes keep
 * spaces, a backslash escapes the next character inside double quotes.
 */
export function splitArgs(line: string): string[] {
  const out: string[] = [];
  const re = /"((?:\\.|[^"\\])*)"|'([^']*)'|(\S+)/g;
  for (const m of line.matchAll(re)) {
    if (m[1] !== undefined) out.push(m[1].replace(/\\(.)/g, "$1"));
    else out.push(m[2] ?? m[3] ?? "");
  }
  return out;
}

let nextId = 0;

/** A Redis command box; the read-only token is the default, the standard one must be chosen. */
export function CommandBox(p: { db: string }) {
  const [line, setLine] = useState("");
  const [token, setToken] = useState<"readonly" | "standard">("readonly");
  const [history, setHistory] = useState<Entry[]>([]);
  const run = async (e: Event) => {
    e.preventDefault();
    const args = splitArgs(line);
    if (args.length === 0) return;
    let output: unknown;
    let failed = false;
    try {
      const [r] = (await kvExec(p.db, [args], token)) as [KvResult];
      failed = "error" in r;
      output = "error" in r ? r.error : r.result;
    } catch (err) {
      failed = true;
      output = messageOf(err);
    }
    setHistory((h) => [{ id: ++nextId, line, token, output, failed }, ...h].slice(0, 50));
    setLine("");
  };
  return (
    <section class="command card" aria-label="Command box">
      <form class="bar" onSubmit={run}>
        <select
          name="token"
          value={token}
          onChange={(e) =>
            setToken((e.target as HTMLSelectElement).value as "readonly" | "standard")
          }
          title="Which of the database's tokens runs the command"
        >
          <option value="readonly">read-only token</option>
          <option value="standard">standard token (writes)</option>
        </select>
        <input
          name="command"
          class="grow mono"
          placeholder="e.g. HGETALL user:1"
          value={line}
          onInput={(e) => setLine((e.target as HTMLInputElement).value)}
        />
        <button type="submit" class="btn primary">
          Run
        </button>
      </form>
      <div class="history">
        {history.map((h) => (
          <div key={h.id} class={`entry ${h.failed ? "failed" : ""}`}>
            <div class="cmd mono">
              <span class="tok">{h.token === "standard" ? "rw" : "ro"}</span> {h.line}
            </div>
            <Pre value={h.output} />
          </div>
        ))}
      </div>
    </section>
  );
}
