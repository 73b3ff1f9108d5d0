import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestCerts } from "../harness/certs.js";
import { spawnStashdKeepingStderr, whenRunning, type StashdProcess } from "../harness/process.js";
import { freePort, stopChild } from "../harness/redis.js";

/**
 * An external Redis over TLS (`rediss://`), verified against a CA the test makes; stashd trusts
 * it through NODE_EXTRA_CA_CERTS, as a user would for a private CA.
 */
let dir: string;
let redis: ChildProcess;
let stashd: StashdProcess;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "stashd-tls-"));
  const certs = makeTestCerts(dir);
  const port = await freePort();
  redis = spawn(
    "redis-server",
    [
      "--port",
      "0",
      "--tls-port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--requirepass",
      "tls-secret",
    ].concat([
      "--tls-cert-file",
      certs.cert,
      "--tls-key-file",
      certs.key,
      "--tls-ca-cert-file",
      certs.ca,
      "--tls-auth-clients",
      "no",
    ]),
    { cwd: dir, stdio: "ignore" },
  );
  stashd = spawnStashdKeepingStderr(path.join(dir, "data"), {
    env: {
      STASHD_KV_REDIS_URL: `rediss://:tls-secret@localhost:${port}`,
      NODE_EXTRA_CA_CERTS: certs.ca,
    },
  });
});

afterAll(async () => {
  await Promise.all([stopChild(stashd.child), stopChild(redis)]);
  rmSync(dir, { recursive: true, force: true });
});

describe("external Redis over TLS", () => {
  it("serves commands through a rediss:// backend", async () => {
    // Running once its banner is shown and `credentials` says so (it fails at once, with its
    // stderr, if stashd exits: a TLS setting it refused).
    const creds = await whenRunning<{
      running: boolean;
      kv: { url: string; databases: { token: string }[] };
    }>(path.join(dir, "data"), stashd);
    const post = async (argv: string[]): Promise<unknown> =>
      (
        await fetch(creds.kv.url, {
          method: "POST",
          headers: { authorization: `Bearer ${creds.kv.databases[0]?.token ?? ""}` },
          body: JSON.stringify(argv),
        })
      ).json();
    expect(await post(["SET", "over-tls", "yes"])).toEqual({ result: "OK" });
    expect(await post(["GET", "over-tls"])).toEqual({ result: "yes" });
  });
});
