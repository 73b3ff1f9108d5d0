import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runStashd, spawnStashd, type CommandResult } from "../harness/process.js";
import { eventually } from "../harness/eventually.js";
import { stopChild } from "../harness/redis.js";

/**
 * `stashd queue reset-token` against a running `bin/stashd` (built by `npm test`'s setup step),
 * as a user runs it: the server re-reads queue-credentials.json and refuses the old token.
 */
let dataDir: string;
let server: ChildProcess;
let logs = "";

/** `bin/stashd ARGS --data-dir DIR` (runStashd: invocations that do not depend on each other run together). */
function cli(args: string[], env: NodeJS.ProcessEnv = {}, dir = dataDir): Promise<CommandResult> {
  return runStashd([...args, "--data-dir", dir], { env });
}

interface QueueCreds {
  running: boolean;
  queue?: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
}

async function credentials(): Promise<QueueCreds> {
  return JSON.parse((await cli(["credentials", "--json"])).stdout) as QueueCreds;
}

function credentialsFile(): string {
  return readFileSync(path.join(dataDir, "queue-credentials.json"), "utf8");
}

/** GET /v2/keys with the token in the Authorization header (or the query string). */
async function getKeys(
  url: string,
  token: string,
  via: "header" | "query" = "header",
): Promise<{ status: number; body: unknown }> {
  const res =
    via === "header"
      ? await fetch(`${url}/v2/keys`, { headers: { authorization: `Bearer ${token}` } })
      : await fetch(`${url}/v2/keys?qstash_token=${encodeURIComponent(token)}`);
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-queue-token-"));
  server = spawnStashd(dataDir, {
    env: { STASHD_REGISTRY_POLL_MS: "20" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  server.stderr?.on("data", (d: Buffer) => (logs += d.toString()));
  // The banner first, then `credentials`: asking it over and over would take CPU from the start.
  await eventually(() => expect(logs).toContain("stashd is running"), { timeoutMs: 20_000 });
  await eventually(async () => expect((await credentials()).running).toBe(true));
});

afterAll(async () => {
  await stopChild(server);
  rmSync(dataDir, { recursive: true, force: true });
});

describe("stashd queue reset-token", () => {
  it("revokes the old queue token on the running server and keeps the signing keys", async () => {
    const before = (await credentials()).queue;
    if (!before) throw new Error("no queue credentials");
    expect((await getKeys(before.url, before.token)).status).toBe(200);

    const r = await cli(["queue", "reset-token"]);
    expect(r.status).toBe(0);
    const fresh = /^QSTASH_TOKEN=(.+)$/m.exec(r.stdout)?.[1] ?? "";
    expect(fresh).not.toBe("");
    expect(fresh).not.toBe(before.token);
    expect(JSON.parse(Buffer.from(fresh, "base64").toString())).toMatchObject({
      UserID: "stashd",
    });
    const after = (await credentials()).queue;
    expect(after).toEqual({ ...before, token: fresh });

    await eventually(async () =>
      expect(await getKeys(before.url, before.token)).toEqual({
        status: 401,
        body: { error: "invalid token" },
      }),
    );
    expect((await getKeys(before.url, before.token, "query")).status).toBe(401);
    expect(await getKeys(before.url, fresh)).toEqual({
      status: 200,
      body: { current: before.currentSigningKey, next: before.nextSigningKey },
    });
    expect((await getKeys(before.url, fresh, "query")).status).toBe(200);
  });

  it("refuses while QSTASH_TOKEN is set, leaving the credentials file as it was", async () => {
    const file = credentialsFile();
    const r = await cli(["queue", "reset-token"], { QSTASH_TOKEN: "some-configured-token" });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("QSTASH_TOKEN is set");
    expect(r.stderr).not.toContain("some-configured-token");
    expect(credentialsFile()).toBe(file);
  });

  it("keeps the last good token while the file is unreadable, without logging its text", async () => {
    const creds = (await credentials()).queue;
    if (!creds) throw new Error("no queue credentials");
    const good = credentialsFile();
    writeFileSync(path.join(dataDir, "queue-credentials.json"), `{"token": not-json-secret}`);
    await eventually(() => expect(logs).toContain("queue credentials file unreadable"));
    expect(logs).not.toContain("not-json-secret");
    expect((await getKeys(creds.url, creds.token)).status).toBe(200);

    // An edit in place (no rename) is noticed too.
    const edited = { ...(JSON.parse(good) as object), token: "edited-by-hand" };
    writeFileSync(path.join(dataDir, "queue-credentials.json"), JSON.stringify(edited));
    // Each worker polls the file on its own, so both answers are awaited together: a request
    // may reach a worker that has not polled yet.
    await eventually(async () => {
      expect((await getKeys(creds.url, creds.token)).status).toBe(401);
      expect((await getKeys(creds.url, "edited-by-hand")).status).toBe(200);
    });
    expect(logs).not.toContain("edited-by-hand");
  });

  it("refuses before the first start and rejects unknown queue subcommands", async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), "stashd-queue-token-empty-"));
    // Neither writes anything, so the two run together.
    const [r, bad] = await Promise.all([
      cli(["queue", "reset-token"], {}, empty),
      cli(["queue", "rotate"]),
    ]).finally(() => rmSync(empty, { recursive: true, force: true }));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("run `stashd start` once first");
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("usage: stashd queue reset-token");
  });
});
