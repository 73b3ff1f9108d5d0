import { useState } from "preact/hooks";
import { get, query } from "../api.js";
import { fmtCount, useLoad } from "../ui.js";

/** GET /console/api/kv/<db>/tree (src/admin/console/kv-namespaces.ts). */
interface TreeLevel {
  prefix: string;
  namespaces: { name: string; count: number }[];
  more: { namespaces: number; keys: number };
  keys: number;
  scanned: number;
  complete: boolean;
}

const SEPARATOR_KEY = "stashd.kv.separator";

/** The separator of key namespaces, kept in this browser (default ":", as Redis Insight's). */
export function useSeparator(): [string, (s: string) => void] {
  const [sep, setSep] = useState(() => localStorage.getItem(SEPARATOR_KEY) || ":");
  return [
    sep,
    (s: string) => {
      if (s !== "") localStorage.setItem(SEPARATOR_KEY, s);
      setSep(s);
    },
  ];
}

/** A SCAN glob for the keys under a namespace prefix (glob characters escaped). */
export const globUnder = (prefix: string): string =>
  `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;

/**
 * The namespace tree of a database (keys grouped by `separator`, with key counts): a level is
 * loaded when opened; choosing a namespace searches the keys under it.
 */
export function NamespaceTree(p: {
  db: string;
  separator: string;
  onSeparator: (s: string) => void;
  onPick: (prefix: string) => void;
}) {
  return (
    <nav class="tree card" aria-label="namespaces">
      <label class="field">
        <span>Separator</span>
        <input
          name="separator"
          value={p.separator}
          maxLength={8}
          onInput={(e) => p.onSeparator((e.target as HTMLInputElement).value)}
        />
      </label>
      {p.separator === "" ? (
        <p class="hint">Type a separator to group keys.</p>
      ) : (
        <Level key={p.separator} db={p.db} prefix="" separator={p.separator} onPick={p.onPick} />
      )}
    </nav>
  );
}

function Level(p: {
  db: string;
  prefix: string;
  separator: string;
  onPick: (prefix: string) => void;
}) {
  const level = useLoad(
    () =>
      get<TreeLevel>(
        `kv/${encodeURIComponent(p.db)}/tree${query({ prefix: p.prefix, separator: p.separator })}`,
      ),
    [p.db, p.prefix, p.separator],
  );
  const l = level.data;
  if (level.error) return <p class="error-line">{level.error}</p>;
  if (!l) return <p class="hint">Loading…</p>;
  return (
    <ul class="tree-level">
      {l.namespaces.map((n) => (
        <Node
          key={n.name}
          db={p.db}
          prefix={`${p.prefix}${n.name}${p.separator}`}
          name={n.name}
          count={n.count}
          separator={p.separator}
          onPick={p.onPick}
        />
      ))}
      {l.more.namespaces > 0 && (
        <li class="hint">
          +{fmtCount(l.more.namespaces)} more namespaces ({fmtCount(l.more.keys)} keys)
        </li>
      )}
      {l.keys > 0 && (
        <li class="hint">
          {fmtCount(l.keys)} {l.keys === 1 ? "key" : "keys"} at this level
        </li>
      )}
      {!l.complete && (
        <li class="hint" title="the scan stopped at its budget: counts are at least these">
          partial: {fmtCount(l.scanned)} keys scanned
        </li>
      )}
    </ul>
  );
}

function Node(p: {
  db: string;
  prefix: string;
  name: string;
  count: number;
  separator: string;
  onPick: (prefix: string) => void;
}) {
  const [open, setOpen] = useState(false);
  return (
    <li>
      <button
        type="button"
        class="tree-node"
        aria-expanded={open}
        data-namespace={p.prefix}
        onClick={() => {
          setOpen(!open);
          p.onPick(p.prefix);
        }}
      >
        <span class="caret">{open ? "▾" : "▸"}</span>
        <span class="ns">{p.name === "" ? "(empty)" : p.name}</span>
        <span class="count">{fmtCount(p.count)}</span>
      </button>
      {open && <Level db={p.db} prefix={p.prefix} separator={p.separator} onPick={p.onPick} />}
    </li>
  );
}
