/**
 * A writer for src/shared/files.test.ts: `node --import tsx json-increment.ts FILE N` increments
 * `n` in the JSON file N times, each a read-modify-write under `withFileLock`.
 */
import { readJsonFile, withFileLock, writeJsonFile } from "../../src/shared/files.js";

const [file = "", times = "0"] = process.argv.slice(2);
for (let i = 0; i < Number(times); i++) {
  withFileLock(file, () => {
    const current = (readJsonFile(file) as { n: number } | undefined)?.n ?? 0;
    writeJsonFile(file, { n: current + 1 });
  });
}
