import { describe, expect, it } from "vitest";
import { command, useGateway } from "../kv/helpers.js";

/**
 * Reliability scenario 5 (docs/reliability.md): the read-only token is refused every command and
 * subcommand that the backend's own COMMAND table flags `write`, and nothing changes.
 */
const { stashd } = useGateway();

type CommandEntry = [string, number, string[], ...unknown[]];

/** `COMMAND` through the gateway: every write command and write subcommand, as argv prefixes. */
async function writeCommands(): Promise<string[][]> {
  const res = await command(stashd(), ["COMMAND"]);
  expect(res.status).toBe(200);
  const entries = (res.body as { result: CommandEntry[] }).result;
  const out: string[][] = [];
  for (const [name, , flags, ...rest] of entries) {
    if (flags.includes("write")) out.push([name]);
    const subcommands = (rest[6] ?? []) as CommandEntry[];
    for (const [sub, , subFlags] of subcommands) {
      if (subFlags.includes("write")) out.push(sub.split("|"));
    }
  }
  return out;
}

describe("read-only token", () => {
  it("is refused every write command of the backend", async () => {
    const writes = await writeCommands();
    expect(writes.length).toBeGreaterThan(50);
    const before = await command(stashd(), ["DBSIZE"]);
    const accepted: string[] = [];
    for (const argv of writes) {
      const full = [...argv, "ro:key", "f", "1", "2", "3"];
      const res = await command(stashd(), full, { token: stashd().kv.readonlyToken });
      if (res.status < 400 || !("error" in (res.body as object))) accepted.push(argv.join(" "));
    }
    console.log(`[reliability] scenario 5: ${writes.length} write commands, accepted 0`);
    expect(accepted).toEqual([]);
    expect(await command(stashd(), ["DBSIZE"])).toEqual(before);
  });
});
