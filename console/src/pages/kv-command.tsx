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

/** Lines typed are recalled with the up and down keys, as in a shell; this many are kept. */
const RECALL = 100;

/**
 * Where `key` moves in the recalled lines (`lines`, newest first): -1 is the line being typed.
 * Answers the new position, or undefined when the key is not Up/Down or there is nowhere to go.
 */
export function recallStep(key: string, at: number, count: number): number | undefined {
  if (key === "ArrowUp" && at + 1 < count) return at + 1;
  if (key === "ArrowDown" && at >= 0) return at - 1;
  return undefined;
}

/**
 * A Redis command box (a CLI): the read-only token is the default, the standard one must be
 * chosen, and which one runs is written beside the input and on every answer; up and down recall
 * earlier lines.
 */
export function CommandBox(p: { db: string }) {
  const [line, setLine] = useState("");
  const [token, setToken] = useState<"readonly" | "standard">("readonly");
  const [history, setHistory] = useState<Entry[]>([]);
  const [typed, setTyped] = useState<string[]>([]);
  const [at, setAt] = useState(-1);
  const [draft, setDraft] = useState("");
  const recall = (e: KeyboardEvent) => {
    const next = recallStep(e.key, at, typed.length);
    if (next === undefined) return;
    e.preventDefault();
    if (at === -1) setDraft(line);
    setAt(next);
    setLine(next === -1 ? draft : (typed[next] ?? ""));
  };
  const run = async (e: Event) => {
    e.preventDefault();
    const args = splitArgs(line);
    if (args.length === 0) return;
    setTyped((t) => [line, ...t.filter((x) => x !== line)].slice(0, RECALL));
    setAt(-1);
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
      <h3>CLI</h3>
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
          onKeyDown={recall}
          aria-label="command"
          autoComplete="off"
        />
        <button type="submit" class="btn primary">
          Run
        </button>
      </form>
      <p class={`hint token-${token}`} data-token={token}>
        {token === "standard"
          ? "Runs with the standard token: commands can change data."
          : "Runs with the read-only token: commands that write are refused."}{" "}
        ↑/↓ recall earlier commands.
      </p>
      <div class="history">
        {history.map((h) => (
          <div key={h.id} class={`entry ${h.failed ? "failed" : ""}`}>
            <div class="cmd mono">
              <span
                class="tok"
                title={h.token === "standard" ? "standard token" : "read-only token"}
              >
                {h.token === "standard" ? "standard" : "read-only"}
              </span>{" "}
              {h.line}
            </div>
            <Pre value={h.output} />
          </div>
        ))}
      </div>
    </section>
  );
}
