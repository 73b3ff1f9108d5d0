import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { RedisConnection } from "../../src/shared/redis/connection.js";
import { eventually } from "../harness/eventually.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { command } from "./helpers.js";

/** The managed default database's directory (socket, password, ACL file). */
const serverDir = (s: TestStashd): string => path.join(s.dataDir, "kv", "redis", "default");

async function mintFor(s: TestStashd, user: string): Promise<string> {
  const rules = ["on", ">pw", "~kept:*", "+get", "+set"];
  expect(await command(s, ["ACL", "SETUSER", user, ...rules])).toEqual({
    status: 200,
    body: { result: "OK" },
  });
  const minted = await command(s, ["ACL", "RESTTOKEN", user, "pw"]);
  expect(minted.body).toEqual({ result: expect.stringMatching(/^acl_/) as unknown });
  return (minted.body as { result: string }).result;
}

const asUser = (s: TestStashd, token: string, argv: unknown[]) => command(s, argv, { token });

describe("ACL users made through a token, on a managed database", () => {
  it("outlive a stashd restart, and DELUSER lasts too", async () => {
    const first = await startStashd();
    try {
      const token = await mintFor(first, "kept-user");
      await mintFor(first, "gone-user");
      expect(await command(first, ["ACL", "DELUSER", "gone-user"])).toEqual({
        status: 200,
        body: { result: 1 },
      });
      expect((await asUser(first, token, ["SET", "kept:a", "1"])).body).toEqual({ result: "OK" });
      await first.stopKeepingData();
      const second = await startStashd({ dataDir: first.dataDir });
      try {
        expect((await asUser(second, token, ["GET", "kept:a"])).body).toEqual({ result: "1" });
        expect((await asUser(second, token, ["DEL", "kept:a"])).body).toEqual({
          error: expect.stringMatching(/^NOPERM/) as unknown,
        });
        const users = (await command(second, ["ACL", "USERS"])).body as { result: string[] };
        expect(users.result).toContain("kept-user");
        expect(users.result).not.toContain("gone-user");
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
    }
  });

  it("outlive a crash of the managed redis-server, whose default user keeps its password", async () => {
    const s = await startStashd({ managedRestartMaxBackoffMs: 200 });
    try {
      const token = await mintFor(s, "crash-user");
      const pid = Number(readFileSync(path.join(serverDir(s), "redis.pid"), "utf8"));
      process.kill(pid, "SIGKILL");
      await eventually(
        async () =>
          expect((await asUser(s, token, ["SET", "kept:b", "2"])).body).toEqual({
            result: "OK",
          }),
        { timeoutMs: 10_000 },
      );
      // A loaded ACL file replaces the default user: it must still need the password.
      const socket = path.join(serverDir(s), "redis.sock");
      const bare = await RedisConnection.open({ path: socket }, 2_000);
      try {
        expect(await bare.send(["GET", "kept:b"])).toEqual({
          kind: "error",
          value: expect.stringMatching(/^NOAUTH/) as unknown,
        });
      } finally {
        bare.destroy();
      }
    } finally {
      await s.stop();
    }
  });
});
