import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Client, Receiver } from "@upstash/qstash";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";

// The image (Dockerfile) built by scripts/container-build.sh and run with podman: health check,
// a real KV and queue request through the published ports, data kept in the volume across a new
// container, graceful stop on SIGTERM. Runs only where podman can build and run containers (the
// script's `check` answers 77 with the reason otherwise, e.g. no podman, or not root).

const SCRIPT = "scripts/container-build.sh";
const checked = spawnSync("sh", [SCRIPT, "check"], { encoding: "utf8" });
const unavailable = checked.status === 77;
if (unavailable) console.warn(`container test skipped: ${checked.stderr.trim()}`);

// One tag and names per checkout and run, so worktrees and runs never share a container.
const checkout = createHash("sha256").update(process.cwd()).digest("hex").slice(0, 12);
const IMAGE = `localhost/stashd-test:${checkout}`;
const NAME = `stashd-test-${checkout}-${process.pid}`;
const VOLUME = `${NAME}-data`;

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** podman with the settings the script chose for this machine. */
function podman(...args: string[]): Ran {
  const r = spawnSync("sh", [SCRIPT, "podman", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout.trim(), stderr: r.stderr.trim() };
}

function podmanOk(...args: string[]): string {
  const r = podman(...args);
  if (r.status !== 0) throw new Error(`podman ${args.join(" ")}: ${r.status}\n${r.stderr}`);
  return r.stdout;
}

/** The image build (minutes when the base or the npm layer is not cached yet). */
function build(): Promise<void> {
  const child = spawn("sh", [SCRIPT, "build"], {
    env: { ...process.env, STASHD_IMAGE: IMAGE },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) =>
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`build exited ${code}:\n${out.slice(-4000)}`)),
    ),
  );
}

interface Running {
  kvUrl: string;
  queueUrl: string;
  adminUrl: string;
  kvToken: string;
  queueToken: string;
  signing: { currentSigningKey: string; nextSigningKey: string };
}

/** A container on the volume with the three ports published on free loopback ports. */
async function runContainer(): Promise<Running> {
  podmanOk(
    ...["run", "-d", "--name", NAME, "-v", `${VOLUME}:/data`],
    ...["-p", "127.0.0.1::8079", "-p", "127.0.0.1::8080", "-p", "127.0.0.1::8081", IMAGE],
  );
  const url = (port: number) => `http://${podmanOk("port", NAME, String(port))}`;
  const adminUrl = url(8081);
  await eventually(async () => expect((await fetch(`${adminUrl}/readyz`)).status).toBe(200), {
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  const creds = JSON.parse(podmanOk("exec", NAME, "stashd", "credentials", "--json")) as {
    kv: { databases: { name: string; token: string }[] };
    queue: { token: string; currentSigningKey: string; nextSigningKey: string };
  };
  const kvToken = creds.kv.databases.find((d) => d.name === "default")?.token ?? "";
  return {
    kvUrl: url(8079),
    queueUrl: url(8080),
    adminUrl,
    kvToken,
    queueToken: creds.queue.token,
    signing: creds.queue,
  };
}

/** `podman stop` (the image's STOPSIGNAL, SIGTERM); returns the exit code and the logs. */
function stopContainer(): { exitCode: string; logs: string } {
  podmanOk("stop", "-t", "30", NAME);
  const exitCode = podmanOk("inspect", NAME, "--format", "{{.State.ExitCode}}");
  const logs = podman("logs", NAME);
  podmanOk("rm", NAME);
  return { exitCode, logs: logs.stdout + logs.stderr };
}

interface Delivery {
  body: string;
  verified: boolean;
}

type SigningKeys = Running["signing"];

interface HostReceiver {
  /** As the container calls it: the name podman gives the host inside its bridge network. */
  url: string;
  deliveries: Delivery[];
  /** The signing keys deliveries are verified with (the container's, once it runs). */
  useKeys(keys: SigningKeys): void;
  close(): void;
}

/** An HTTP receiver on all the host's addresses, recording each request and its signature. */
async function startHostReceiver(): Promise<HostReceiver> {
  const deliveries: Delivery[] = [];
  let keys: SigningKeys = { currentSigningKey: "", nextSigningKey: "" };
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const signature = String(req.headers["upstash-signature"] ?? "");
      void new Receiver(keys)
        .verify({ signature, body, url: `${url}${req.url ?? ""}` })
        .catch(() => false)
        .then((verified) => {
          deliveries.push({ body, verified });
          res.end("ok");
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  const url = `http://host.containers.internal:${(server.address() as AddressInfo).port}`;
  return { url, deliveries, useKeys: (k) => (keys = k), close: () => server.close() };
}

describe.skipIf(unavailable)("container image (podman)", () => {
  let receiver: HostReceiver | undefined;

  beforeAll(async () => {
    if (checked.status !== 0) throw new Error(`${SCRIPT} check: ${checked.stderr}`);
    await build();
    receiver = await startHostReceiver();
  }, 1_200_000);

  afterAll(() => {
    podman("rm", "-f", "-t", "0", NAME);
    podman("volume", "rm", "-f", VOLUME);
    receiver?.close();
  });

  it("serves KV and queue, keeps data in the volume, stops on SIGTERM", async () => {
    const first = await runContainer();
    expect(podman("healthcheck", "run", NAME).status).toBe(0);
    expect(podmanOk("exec", NAME, "id", "-u")).toBe("10001");
    // The whole `npm run build` is in the image: the console's bundle (the queue's Lua scripts
    // are proven by the publish below).
    const bundle = await fetch(`${first.adminUrl}/console/assets/app.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).length).toBeGreaterThan(1000);

    const kv = new Redis({ url: first.kvUrl, token: first.kvToken });
    expect(await kv.set("container:key", "kept")).toBe("OK");
    const queue = new Client({ baseUrl: first.queueUrl, token: first.queueToken });
    const rx = receiver as HostReceiver;
    rx.useKeys(first.signing);
    await queue.publishJSON({ url: `${rx.url}/hook`, body: { hello: "container" } });
    await eventually(() => expect(rx.deliveries).toHaveLength(1), { timeoutMs: 15_000 });
    expect(rx.deliveries[0]).toEqual({ body: '{"hello":"container"}', verified: true });
    const delayed = await queue.publishJSON({ url: `${rx.url}/later`, body: {}, delay: 3600 });

    const stopped = stopContainer();
    expect(stopped.exitCode).toBe("0");
    expect(stopped.logs).toContain('"msg":"stopped"');

    const second = await runContainer();
    expect(second.kvToken).toBe(first.kvToken);
    expect(second.queueToken).toBe(first.queueToken);
    expect(await new Redis({ url: second.kvUrl, token: second.kvToken }).get("container:key")).toBe(
      "kept",
    );
    const again = new Client({ baseUrl: second.queueUrl, token: second.queueToken });
    expect((await again.messages.get(delayed.messageId)).messageId).toBe(delayed.messageId);
    expect(stopContainer().exitCode).toBe("0");
  }, 240_000);
});
