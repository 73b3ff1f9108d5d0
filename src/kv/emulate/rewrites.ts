import type { Arg } from "../../shared/redis/resp.js";

/**
 * `XTRIM key MAXLEN|MINID ~ threshold` trims exactly, as Upstash does (Redis's `~` trims only
 * whole macro nodes, so it keeps more than asked: 49 of 1000 entries for `~ 30`). With LIMIT the `~`
 * stays: Redis accepts LIMIT only with it. Returns argv unchanged (same array) otherwise.
 */
export function exactTrim(argv: Arg[]): Arg[] {
  const strategy = argv[2]?.toString().toLowerCase();
  if (strategy !== "maxlen" && strategy !== "minid") return argv;
  if (argv[3]?.toString() !== "~") return argv;
  if (argv.some((a, i) => i > 3 && a.toString().toLowerCase() === "limit")) return argv;
  const out = argv.slice();
  out[3] = "=";
  return out;
}
