/**
 * Heap snapshots of a bench's stashd child, and what grew between two of them: so a soak can
 * tell a leak (live objects piling up) from a resident set that only grows while V8 and the
 * allocator settle. The child runs with `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir DIR`
 * (`snapshotFlags`); `takeSnapshot` signals it and waits for the file, which V8 writes after a
 * full garbage collection, so a snapshot holds only what is still reachable.
 *
 * Also runnable on its own: `npx tsx bench/lib/heap.ts BEFORE.heapsnapshot AFTER.heapsnapshot`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const snapshotFlags = (dir: string): string[] => [
  "--heapsnapshot-signal=SIGUSR2",
  "--diagnostic-dir",
  dir,
];

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Signals `pid` and resolves with the new snapshot's path once V8 has finished writing it. */
export async function takeSnapshot(pid: number, dir: string, timeoutMs = 120_000): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, "SIGUSR2");
  let file: string | undefined;
  let size = -1;
  for (const end = Date.now() + timeoutMs; Date.now() < end; await pause(500)) {
    file ??= readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f));
    if (file === undefined) continue;
    const now = statSync(path.join(dir, file)).size;
    // Written in one go by the child's main thread: a size unchanged for 500 ms is the end.
    if (now > 0 && now === size) return path.join(dir, file);
    size = now;
  }
  throw new Error(`no heap snapshot from ${pid} within ${timeoutMs} ms`);
}

/** Live objects of one kind: how many, and their own (shallow) bytes. */
interface Tally {
  count: number;
  bytes: number;
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Kinds whose names are contents (strings, numbers): grouped by kind alone. */
const NAMELESS = new Set(["string", "concatenated string", "sliced string", "number", "hidden"]);

/** Live objects per kind (`object:Map`, `closure:onData`, `string`, ...) of a snapshot file. */
export function tallyOf(file: string): Map<string, Tally> {
  const s = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const tallies = new Map<string, Tally>();
  for (let i = 0; i < s.nodes.length; i += fields.length) {
    const type = types[s.nodes[i + (typeAt as number)] as number] ?? "?";
    const key = NAMELESS.has(type)
      ? type
      : `${type}:${s.strings[s.nodes[i + (nameAt as number)] as number]}`;
    const t = tallies.get(key) ?? { count: 0, bytes: 0 };
    t.count += 1;
    t.bytes += s.nodes[i + (sizeAt as number)] as number;
    tallies.set(key, t);
  }
  return tallies;
}

export interface HeapGrowth {
  /** Live bytes in each snapshot, MB. */
  beforeMb: number;
  afterMb: number;
  /** The kinds that grew most in bytes, largest first. */
  top: { kind: string; count: number; bytes: number }[];
}

export function growthBetween(before: string, after: string, top = 8): HeapGrowth {
  const a = tallyOf(before);
  const b = tallyOf(after);
  const sum = (m: Map<string, Tally>) => [...m.values()].reduce((n, t) => n + t.bytes, 0) / 2 ** 20;
  const grown = [...b].map(([kind, t]) => ({
    kind,
    count: t.count - (a.get(kind)?.count ?? 0),
    bytes: t.bytes - (a.get(kind)?.bytes ?? 0),
  }));
  grown.sort((x, y) => y.bytes - x.bytes);
  return { beforeMb: sum(a), afterMb: sum(b), top: grown.slice(0, top) };
}

export function describeGrowth(g: HeapGrowth): string {
  const lines = [
    `live heap ${g.beforeMb.toFixed(1)} MB -> ${g.afterMb.toFixed(1)} MB; grown most:`,
  ];
  for (const t of g.top)
    lines.push(
      `  ${t.kind}: ${t.count >= 0 ? "+" : ""}${t.count} objects, ${t.bytes >= 0 ? "+" : ""}${(t.bytes / 1024).toFixed(0)} KB`,
    );
  return lines.join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [before, after] = process.argv.slice(2);
  if (!before || !after) throw new Error("usage: heap.ts BEFORE.heapsnapshot AFTER.heapsnapshot");
  console.log(describeGrowth(growthBetween(before, after)));
}
