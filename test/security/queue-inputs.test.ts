import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  compileRetryDelay,
  MAX_RETRY_DELAY_DEPTH,
  MAX_RETRY_DELAY_LENGTH,
} from "../../src/queue/domain/retry-delay.js";
import { AppError } from "../../src/shared/errors.js";
import { runFuzz } from "../harness/fuzz.js";
import { pick, seeded } from "../harness/random.js";
import { queueEnv, received, type QueueTestEnv } from "../queue/setup.js";

/**
 * Issue 25, hole 12 (queue part): hostile publish inputs answer a clear 400 `{"error"}` instead
 * of a 500 or a silent acceptance, and the service keeps answering: retry-delay expressions
 * bounded in length and nesting, destinations and callbacks with a host, bounded timeouts and
 * callback delays, and forwarded headers that cannot set the delivery's connection headers.
 */
let env: QueueTestEnv;
beforeAll(async () => {
  env = await queueEnv({ queueMaxTimeoutMs: 60 * 60 * 1000 });
});
afterAll(async () => {
  await env.close();
});

async function publishWith(
  headers: Record<string, string>,
  destination = "http://127.0.0.1:9/x",
): Promise<{ status: number; error?: string }> {
  const res = await env.api(`/v2/publish/${destination}`, {
    method: "POST",
    headers: { "upstash-delay": "1h", ...headers },
    body: "b",
  });
  const body = (await res.json()) as { error?: string };
  return { status: res.status, ...(body.error === undefined ? {} : { error: body.error }) };
}

/** Callback options apply only with a callback URL. */
const CALLBACKS = {
  "upstash-callback": "http://127.0.0.1:9/cb",
  "upstash-failure-callback": "http://127.0.0.1:9/fcb",
};

/** The service still answers an ordinary request. */
async function stillAnswers(): Promise<void> {
  expect((await publishWith({})).status).toBe(201);
  expect((await env.api("/v2/keys")).status).toBe(200);
}

describe("Upstash-Retry-Delay", () => {
  it("refuses deep nesting and long expressions with a 400 naming the limit", async () => {
    const deep = `${"(".repeat(5000)}1${")".repeat(5000)}`;
    expect(await publishWith({ "upstash-retry-delay": deep })).toEqual({
      status: 400,
      error: `invalid Upstash-Retry-Delay expression: longer than ${MAX_RETRY_DELAY_LENGTH} characters`,
    });
    const nested = `${"(".repeat(100)}1${")".repeat(100)}`;
    expect(await publishWith({ "upstash-retry-delay": nested })).toEqual({
      status: 400,
      error: `invalid Upstash-Retry-Delay expression: nested deeper than ${MAX_RETRY_DELAY_DEPTH} levels`,
    });
    for (const expr of [`${"-".repeat(200)}1`, `${"abs(".repeat(200)}1${")".repeat(200)}`]) {
      expect(await publishWith({ "upstash-retry-delay": expr })).toMatchObject({ status: 400 });
      expect(
        await publishWith({ ...CALLBACKS, "upstash-callback-retry-delay": expr }),
      ).toMatchObject({
        status: 400,
      });
    }
    expect((await publishWith({ "upstash-retry-delay": `1${"+1".repeat(400)}` })).status).toBe(201);
    await stillAnswers();
  });

  it("compiles or refuses with a 400 every random expression (fuzz)", async () => {
    const rand = seeded(25_12);
    const parts = ["(", ")", "-", "+", "*", "/", ",", "1", "2.5", "retried", "pow(", "max(", " "];
    const expression = () => {
      const n = Math.floor(rand() * (rand() < 0.1 ? 3000 : 60));
      return Array.from({ length: n }, () => pick(rand, parts)).join("");
    };
    for (let i = 0; i < 2000; i++) {
      const expr = expression();
      try {
        const delay = compileRetryDelay(expr)(3);
        expect(Number.isFinite(delay)).toBe(true);
      } catch (err) {
        expect(err, expr).toBeInstanceOf(AppError);
        expect((err as AppError).status).toBe(400);
      }
    }
    let last = "";
    await runFuzz(
      "retry-delay",
      100,
      async (i) => {
        last = i % 10 === 0 ? `${"-".repeat(12_000)}1` : expression().slice(0, 4000);
        const r = await publishWith({ "upstash-retry-delay": last });
        expect([201, 400]).toContain(r.status);
        return { status: r.status, body: r.error ?? "" };
      },
      () => last.slice(0, 80),
    );
    await stillAnswers();
  });
});

describe("destination and callback URLs", () => {
  it("refuses URLs without a host with a 400, wherever a URL is accepted", async () => {
    for (const url of ["http:///x", "https:///", "http://@/x"]) {
      const r = await publishWith({}, url);
      expect(r.status, url).toBe(400);
      expect(r.error).toMatch(/invalid destination url/);
    }
    for (const header of ["upstash-callback", "upstash-failure-callback"]) {
      for (const url of ["http:///cb", "http:/cb", "https:cb", "ftp://h/cb"]) {
        const r = await publishWith({ [header]: url });
        expect(r.status, `${header}: ${url}`).toBe(400);
        expect(r.error).toMatch(/invalid Upstash-(Failure-)?Callback url/);
      }
    }
    const group = await env.api("/v2/topics/g1/endpoints", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ endpoints: [{ url: "http:///x" }] }),
    });
    expect(group.status).toBe(400);
    expect(((await group.json()) as { error: string }).error).toMatch(/invalid endpoint url/);
    const schedule = await env.api("/v2/schedules/http:///x", {
      method: "POST",
      headers: { "upstash-cron": "* * * * *" },
    });
    expect(schedule.status).toBe(400);
    await stillAnswers();
  });
});

describe("timeouts and callback delays", () => {
  it("refuses a timeout past STASHD_QUEUE_MAX_TIMEOUT_MS and callback delays past the maximum delay", async () => {
    for (const [name, value] of [
      ["upstash-timeout", "1000000000000"],
      ["upstash-timeout", "2h"],
      ["upstash-callback-timeout", "99999999999999999999"],
      ["upstash-failure-callback-timeout", "61m"],
    ] as const) {
      const r = await publishWith({ ...CALLBACKS, [name]: value });
      expect(r.status, `${name}: ${value}`).toBe(400);
      expect(r.error).toMatch(/exceeds the maximum of 3600000 ms \(STASHD_QUEUE_MAX_TIMEOUT_MS\)/);
    }
    for (const name of ["upstash-callback-delay", "upstash-failure-callback-delay"]) {
      const r = await publishWith({ ...CALLBACKS, [name]: "400000d" });
      expect(r.status, name).toBe(400);
      expect(r.error).toMatch(/delay exceeds the maximum/);
    }
    expect((await publishWith({ "upstash-timeout": "1h" })).status).toBe(201);
    expect((await publishWith({ "upstash-timeout": "1e12" })).status).toBe(400);
    await stillAnswers();
  });
});

describe("forwarded headers", () => {
  it("cannot set the delivery's Host or connection headers; others are delivered", async () => {
    const rx = await env.receiver();
    const res = await env.api(`/v2/publish/${rx.url}/fwd`, {
      method: "POST",
      headers: {
        "upstash-forward-host": "evil.example",
        "upstash-forward-content-length": "1",
        "upstash-forward-transfer-encoding": "chunked",
        "upstash-forward-connection": "upgrade",
        "upstash-forward-upgrade": "websocket",
        "upstash-forward-te": "trailers",
        "upstash-forward-proxy-authorization": "Basic eA==",
        "upstash-forward-x-kept": "yes",
      },
      body: "the whole body",
    });
    expect(res.status).toBe(201);
    const got = await received(rx, 0);
    expect(got.headers.host).toBe(new URL(rx.url).host);
    expect(got.body).toBe("the whole body");
    expect(got.headers["x-kept"]).toBe("yes");
    expect(got.headers["proxy-authorization"]).toBeUndefined();
    expect(got.headers.upgrade).toBeUndefined();
    expect(got.headers["transfer-encoding"]).toBeUndefined();
    expect(got.signatureError).toBeUndefined();
  });

  it("delivers whole bodies when a workflow SDK forwards its request's framing headers", async () => {
    // upstash-workflow (Python) forwards every header of the request it received, as
    // Upstash-Forward-* and, for context.call, Upstash-Callback-Forward-*: Content-Length among
    // them, with the length of *that* request's body (issue 27 item 8).
    const incoming = {
      host: "app.example:3000",
      "content-length": "3",
      "transfer-encoding": "chunked",
      connection: "keep-alive",
      "accept-encoding": "gzip, deflate",
      "user-agent": "python-httpx/0.27",
      "upstash-workflow-runid": "wfr_x",
    };
    const forward = (prefix: string) =>
      Object.fromEntries(Object.entries(incoming).map(([k, v]) => [`${prefix}${k}`, v]));
    const step = await env.receiver();
    const callback = await env.receiver();
    step.responseBody = "a response longer than three bytes";
    const body = JSON.stringify({ step: 1, payload: "x".repeat(200) });
    const res = await env.api(`/v2/publish/${step.url}/step`, {
      method: "POST",
      headers: {
        ...forward("upstash-forward-"),
        ...forward("upstash-callback-forward-"),
        "upstash-callback": `${callback.url}/cb`,
        "content-type": "application/json",
      },
      body,
    });
    expect(res.status).toBe(201);
    const got = await received(step, 0);
    expect(got.body).toBe(body);
    expect(got.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(got.headers.host).toBe(new URL(step.url).host);
    expect(got.headers["upstash-workflow-runid"]).toBe("wfr_x");
    expect(got.signatureError).toBeUndefined();
    const cb = await received(callback, 0);
    expect(cb.headers["content-length"]).toBe(String(Buffer.byteLength(cb.body)));
    const parsed = JSON.parse(cb.body) as { body: string };
    expect(Buffer.from(parsed.body, "base64").toString()).toBe(step.responseBody);
    expect(cb.headers["upstash-workflow-runid"]).toBe("wfr_x");

    // The same through /v2/batch, and through Upstash-Header-Forward (the request's own headers).
    const batched = await env.receiver();
    const batch = await env.api("/v2/batch", {
      method: "POST",
      body: JSON.stringify([
        { destination: `${batched.url}/b`, headers: forward("upstash-forward-"), body },
      ]),
    });
    expect(batch.status).toBe(201);
    expect((await received(batched, 0)).body).toBe(body);
    const all = await env.receiver();
    const whole = await env.api(`/v2/publish/${all.url}/h`, {
      method: "POST",
      headers: { "upstash-header-forward": "true", "x-own": "1" },
      body,
    });
    expect(whole.status).toBe(201);
    const h = await received(all, 0);
    expect(h.body).toBe(body);
    expect(h.headers["x-own"]).toBe("1");
  });
});
