import path from "node:path";
import { fileURLToPath } from "node:url";
import { runtimeCycles } from "./import-cycles.js";

/**
 * `npm run check`: fails when the files under src/ import each other in a circle at runtime
 * (type-only imports do not count; scripts/import-cycles.ts). A cycle makes the evaluation order
 * decide which module sees the other half-initialised; break it by moving what both need into a
 * third module.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const cycles = runtimeCycles(path.join(root, "src"), root);
if (cycles.length > 0) {
  process.stderr.write(`runtime import cycles (${cycles.length}):\n`);
  for (const { cycle, members } of cycles) {
    process.stderr.write(
      `  ${cycle.join(" -> ")}\n    (all files in this circle: ${members.join(", ")})\n`,
    );
  }
  process.exit(1);
}
process.stdout.write("no runtime import cycles in src/\n");
