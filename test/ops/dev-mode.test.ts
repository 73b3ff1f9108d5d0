import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Client, Receiver } from "@upstash/qstash";
import { Client as WorkflowClient, serve } from "@upstash/workflow";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEV_CREDENTIALS } from "../../src/dev.js";
import { eventually } from "../harness/eventually.js";
import { runStashd } from "../harness/process.js";
import { startApp, type App } from "../workflow/harness.js";
import { spawnStashd, type Spawned } from "./helpers.js";

/**
 * `stashd dev` in the place of the vendor's QStash dev server: an app whose only setting is
 * `QSTASH_DEV=true` (plus QSTASH_DEV_PORT, as the port 8080 may be taken on a shared machine)
 * publishes, verifies and runs a workflow against it, through the SDKs' own dev mode. If the
 * SDK did not adopt stashd it would try to download and start the vendor binary instead, and
 * fail (offline) or collide with stashd's port.
 */
let dataDir: string;
let port: number;
let dev: Spawned;
let app: App;
const saved = { dev: process.env.QSTASH_DEV, port: process.env.QSTASH_DEV_PORT };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port: p } = server.address() as net.AddressInfo;
      server.close(() => resolve(p));
    });
  });
}

/** `bin/stashd dev` on the test's data dir; STASHD_HOST must not take it off loopback. */
function spawnDev(...extra: string[]): Spawned {
  const args = ["dev", "--data-dir", dataDir, "--kv-port", "0", "--admin-port", "0", ...extra];
  return spawnStashd(args, {
    QSTASH_DEV_PORT: String(port),
    STASHD_HOST: "0.0.0.0",
    STASHD_LOG_LEVEL: "warn",
  });
}

function untilDevRunning(s: Spawned): Promise<string> {
  return eventually(
    () => {
      if (!s.output().includes("QSTASH_DEV=true")) throw new Error(`not running:\n${s.output()}`);
      return s.output();
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
}

async function stop(s: Spawned): Promise<void> {
  s.child.kill("SIGTERM");
  expect(await s.exited).toBe(0);
}

function queueApi(pathname: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${DEV_CREDENTIALS.token}`);
  return fetch(`http://127.0.0.1:${port}${pathname}`, { ...init, headers });
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-dev-"));
  port = await freePort();
  dev = spawnDev();
  await untilDevRunning(dev);
  // The app's whole configuration.
  process.env.QSTASH_DEV = "true";
  process.env.QSTASH_DEV_PORT = String(port);
  app = await startApp();
});

afterAll(async () => {
  process.env.QSTASH_DEV = saved.dev;
  process.env.QSTASH_DEV_PORT = saved.port;
  if (saved.dev === undefined) delete process.env.QSTASH_DEV;
  if (saved.port === undefined) delete process.env.QSTASH_DEV_PORT;
  await app?.close();
  if (dev && dev.child.exitCode === null) await stop(dev);
  rmSync(dataDir, { recursive: true, force: true });
});

describe("stashd dev", () => {
  it("serves the dev credentials the installed SDK ships", () => {
    const sdk = readFileSync("node_modules/@upstash/qstash/index.js", "utf8");
    const block = /var DEV_CREDENTIALS = \{([^}]*)\}/.exec(sdk)?.[1] ?? "";
    const value = (name: string) => new RegExp(`${name}: "([^"]+)"`).exec(block)?.[1];
    expect({
      token: value("token"),
      currentSigningKey: value("currentSigningKey"),
      nextSigningKey: value("nextSigningKey"),
    }).toEqual(DEV_CREDENTIALS);
  });

  it("prints the .env lines and listens on loopback only", async () => {
    const out = dev.output();
    expect(out).toContain(`QSTASH_DEV_PORT=${port}`);
    expect(out).toMatch(/^UPSTASH_REDIS_REST_URL=http:\/\/127\.0\.0\.1:\d+$/m);
    expect(out).toMatch(/^UPSTASH_REDIS_REST_TOKEN=\S+$/m);
    expect(out).toContain(`# QSTASH_URL=http://127.0.0.1:${port}`);
    expect(out).toContain(`# QSTASH_TOKEN=${DEV_CREDENTIALS.token}`);
    expect(out).not.toContain("0.0.0.0");
    const creds = JSON.parse(
      (await runStashd(["credentials", "--json", "--data-dir", dataDir])).stdout,
    ) as { queue: { url: string; token: string; currentSigningKey: string } };
    expect(creds.queue).toMatchObject({
      url: `http://127.0.0.1:${port}`,
      token: DEV_CREDENTIALS.token,
      currentSigningKey: DEV_CREDENTIALS.currentSigningKey,
    });
  });

  it("is adopted by the SDK's dev mode: publish, then verify with the dev keys", async () => {
    const received: { body: string; valid: boolean }[] = [];
    // Dev mode from the environment (QSTASH_DEV) and from the option: both use the dev keys.
    const receivers = [new Receiver(), new Receiver({ devMode: true })];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const signature = String(req.headers["upstash-signature"] ?? "");
        const request = { signature, body, url: `${url}${req.url ?? "/"}` };
        void Promise.all(receivers.map((r) => r.verify(request)))
          .then(
            (valid) => received.push({ body, valid: valid.every(Boolean) }),
            () => received.push({ body, valid: false }),
          )
          .finally(() => res.end("ok"));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const log = vi.spyOn(console, "log");
    try {
      const client = new Client();
      const { messageId } = await client.publishJSON({ url: `${url}/hook`, body: { hi: 1 } });
      expect(messageId).toMatch(/^msg_/);
      await eventually(() => expect(received).toEqual([{ body: '{"hi":1}', valid: true }]), {
        timeoutMs: 10_000,
      });
      const adopted = log.mock.calls.flat().map(String);
      expect(
        adopted.some((l) => l.includes(`Server already running at http://127.0.0.1:${port}`)),
      ).toBe(true);
    } finally {
      log.mockRestore();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("runs a workflow served with @upstash/workflow's serve, in dev mode", async () => {
    const steps: string[] = [];
    const url = app.route(
      "/wf",
      serve<{ n: number }>(async (context) => {
        const doubled = await context.run("double", () => context.requestPayload.n * 2);
        await context.run("record", () => {
          steps.push(`record ${doubled}`);
        });
      }).handler,
    );
    const client = new WorkflowClient({});
    const { workflowRunId } = await client.trigger({ url, body: { n: 21 } });
    expect(workflowRunId).toMatch(/^wfr_/);
    await eventually(() => expect(steps).toEqual(["record 42"]), { timeoutMs: 15_000 });
    await eventually(async () => {
      const { runs } = await client.logs({ workflowRunId });
      expect(runs[0]?.workflowState).toBe("RUN_SUCCESS");
    });
  });

  it("refuses signing key rotation with a clear error, keeping the dev pair", async () => {
    const rotate = await queueApi("/v2/keys/rotate", { method: "POST" });
    expect(rotate.status).toBe(403);
    const body = (await rotate.json()) as { error: string };
    expect(body.error).toContain("signing key rotation is disabled");
    expect(body.error).toContain("stashd dev");
    const keys = (await (await queueApi("/v2/keys")).json()) as Record<string, string>;
    expect(keys).toEqual({
      current: DEV_CREDENTIALS.currentSigningKey,
      next: DEV_CREDENTIALS.nextSigningKey,
    });
  });

  it("refuses a data dir of `stashd start` and an external queue Redis", async () => {
    const other = mkdtempSync(path.join(os.tmpdir(), "stashd-dev-other-"));
    try {
      const keys = { currentSigningKey: "sig_a", nextSigningKey: "sig_b" };
      writeFileSync(
        path.join(other, "queue-credentials.json"),
        JSON.stringify({ token: "cHJvZA==", ...keys }),
      );
      const args = ["dev", "--data-dir", other, "--kv-port", "0", "--admin-port", "0"];
      // Both are refused before anything is written (the first only reads the credentials file
      // under its lock; the second fails on its settings), so they run together.
      const [refused, external] = await Promise.all([
        runStashd(args, { env: { QSTASH_DEV_PORT: "0" } }),
        runStashd(args, {
          env: { QSTASH_DEV_PORT: "0", STASHD_QUEUE_REDIS_URL: "redis://127.0.0.1:1" },
        }),
      ]);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(
        "holds the queue credentials of a `stashd start` deployment",
      );
      expect(external.status).toBe(1);
      expect(external.stderr).toContain("STASHD_QUEUE_REDIS_URL is set");
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("keeps its store across restarts, and --fresh starts empty", async () => {
    const client = new Client();
    const { messageId } = await client.publish({
      url: "http://127.0.0.1:9/never",
      body: "later",
      delay: 3600,
    });
    await stop(dev);
    dev = spawnDev();
    await untilDevRunning(dev);
    expect((await queueApi(`/v2/messages/${messageId}`)).status).toBe(200);
    await stop(dev);
    dev = spawnDev("--fresh");
    await untilDevRunning(dev);
    expect((await queueApi(`/v2/messages/${messageId}`)).status).toBe(404);
    const keys = (await (await queueApi("/v2/keys")).json()) as Record<string, string>;
    expect(keys.current).toBe(DEV_CREDENTIALS.currentSigningKey);
  });
});
