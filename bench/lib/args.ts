/** The benches' command line: `--name value` options and the `--smoke` flag. */

/** The value after `--name` on the command line, undefined when absent. */
export function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

/** `--smoke`: every phase for a moment (CI runs it so the script keeps working). */
export const smoke = process.argv.includes("--smoke");
