import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonFile, withFileLock, writeJsonFile } from "./files.js";

const worker = path.resolve("test/harness/json-increment.ts");
let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function increments(file: string, times: number): Promise<number | null> {
  const child = spawn(process.execPath, ["--import", "tsx", worker, file, String(times)], {
    stdio: "inherit",
  });
  return new Promise((resolve) => child.on("exit", resolve));
}

describe("withFileLock", () => {
  it("keeps every read-modify-write of four processes writing at once", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stashd-lock-"));
    const file = path.join(dir, "counter.json");
    const codes = await Promise.all([1, 2, 3, 4].map(() => increments(file, 150)));
    expect(codes).toEqual([0, 0, 0, 0]);
    expect(readJsonFile(file)).toEqual({ n: 600 });
    expect(() => readFileSync(`${file}.lock`)).toThrow(/ENOENT/);
  });

  it("breaks a lock left by a writer that died holding it", () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stashd-lock-"));
    const file = path.join(dir, "data.json");
    writeFileSync(`${file}.lock`, "");
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, old, old);
    withFileLock(file, () => writeJsonFile(file, { ok: true }));
    expect(readJsonFile(file)).toEqual({ ok: true });
  });

  it("releases the lock when the update throws", () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stashd-lock-"));
    const file = path.join(dir, "data.json");
    expect(() =>
      withFileLock(file, () => {
        throw new Error("refused");
      }),
    ).toThrow("refused");
    expect(withFileLock(file, () => 42)).toBe(42);
  });
});
