import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/**
 * Runtime import cycles among the TypeScript files under a folder. A runtime import is every
 * `import … from`, `import "…"` and `export … from` of a relative path except `import type` and
 * `export type`: with `verbatimModuleSyntax` (tsconfig.json) only those are erased, so even
 * `import { type A } from "./a.js"` loads ./a.js. Dynamic `import()` is left out: it runs after
 * both modules have been evaluated, so it cannot see one half-initialised. Specifiers are written
 * with `.js` (NodeNext) and resolve to the `.ts` file, or to `index.ts` of a folder.
 */
export type ImportGraph = Map<string, string[]>;

/** Every `.ts` file below `dir` (recursively) except tests, as absolute paths. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** Relative specifiers `file` loads when it is evaluated. */
export function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  return source.statements.flatMap((stmt) => {
    if (ts.isImportDeclaration(stmt)) {
      if (stmt.importClause?.isTypeOnly) return [];
      return specifierOf(stmt.moduleSpecifier);
    }
    if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier && !stmt.isTypeOnly) {
      return specifierOf(stmt.moduleSpecifier);
    }
    return [];
  });
}

function specifierOf(node: ts.Expression): string[] {
  return ts.isStringLiteral(node) && node.text.startsWith(".") ? [node.text] : [];
}

/** The file a relative specifier names, if it is one of `known`. */
function resolveSpecifier(
  from: string,
  spec: string,
  known: ReadonlySet<string>,
): string | undefined {
  const target = path.resolve(path.dirname(from), spec);
  const candidates = [target.replace(/\.js$/, ".ts"), target, path.join(target, "index.ts")];
  return candidates.find((c) => known.has(c));
}

/** The runtime import graph of the files under `dir`: file → files it loads. */
export function importGraph(dir: string): ImportGraph {
  const files = sourceFiles(dir);
  const known = new Set(files);
  return new Map(
    files.map((file) => [
      file,
      runtimeImports(file).flatMap((spec) => resolveSpecifier(file, spec, known) ?? []),
    ]),
  );
}

/** A set of files that import each other in a circle, with files named relative to a root. */
export interface ImportCycle {
  /** One shortest circle, in import order, the first file repeated at the end. */
  cycle: string[];
  /** Every file in the circle's strongly connected component, sorted. */
  members: string[];
}

/** One cycle per strongly connected component of the graph that has one (Tarjan). */
export function findCycles(graph: ImportGraph, root: string): ImportCycle[] {
  const named = (files: string[]) => files.map((f) => path.relative(root, f));
  return stronglyConnected(graph)
    .filter((scc) => scc.length > 1 || (graph.get(scc[0] ?? "") ?? []).includes(scc[0] ?? ""))
    .map((scc) => ({ cycle: named(cycleWithin(graph, new Set(scc))), members: named(scc) }));
}

/** Runtime import cycles among the files under `dir`, named relative to `root`. */
export function runtimeCycles(dir: string, root: string = dir): ImportCycle[] {
  return findCycles(importGraph(dir), root);
}

function stronglyConnected(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    out.push(scc.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** A shortest path from the component's first file back to itself (breadth first). */
function cycleWithin(graph: ImportGraph, members: ReadonlySet<string>): string[] {
  const start = [...members][0] ?? "";
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift() ?? "";
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) return [...pathTo(previous, v, start), start];
      if (previous.has(w)) continue;
      previous.set(w, v);
      queue.push(w);
    }
  }
  return [start];
}

function pathTo(previous: ReadonlyMap<string, string>, end: string, start: string): string[] {
  const reversed = [end];
  for (let v = end; v !== start;) {
    v = previous.get(v) ?? start;
    reversed.push(v);
  }
  return reversed.reverse();
}
