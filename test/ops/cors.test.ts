import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * CORS on both token APIs, with the preflights a browser sends before the SDKs' requests: no
 * token (browsers never send one with a preflight), the origin of the page, and the method and
 * headers the real request will carry.
 */
let stashd: TestStashd;

beforeAll(async () => {
  stashd = await startStashd();
});
afterAll(async () => {
  await stashd?.stop();
});

function preflight(url: string, method: string, headers: string): Promise<Response> {
  return fetch(url, {
    method: "OPTIONS",
    headers: {
      origin: "https://app.example",
      "access-control-request-method": method,
      "access-control-request-headers": headers,
    },
  });
}

function allowed(res: Response, header: string): string[] {
  return (res.headers.get(header) ?? "").split(",").map((h) => h.trim().toLowerCase());
}

describe("CORS on the queue API", () => {
  it("answers a publish preflight without a token, allowing what qstash-js sends", async () => {
    const asked =
      "authorization,content-type,upstash-method,upstash-delay,upstash-forward-x-trace,upstash-telemetry-sdk";
    const res = await preflight(
      `${stashd.queue.url}/v2/publish/https://example.com/hook`,
      "POST",
      asked,
    );
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(allowed(res, "access-control-allow-methods")).toEqual(
      expect.arrayContaining(["get", "post", "put", "patch", "delete"]),
    );
    expect(allowed(res, "access-control-allow-headers")).toEqual(
      expect.arrayContaining(asked.split(",")),
    );
    expect(res.headers.get("vary")).toBe("Access-Control-Request-Headers");
    expect(Number(res.headers.get("access-control-max-age"))).toBeGreaterThan(0);
  });

  it("allows a DELETE preflight on any path, and ignores a malformed header list", async () => {
    const res = await preflight(`${stashd.queue.url}/v2/messages/msg_x`, "DELETE", "a b\r\n");
    expect(res.status).toBe(204);
    expect(allowed(res, "access-control-allow-headers")).toEqual(["authorization", "content-type"]);
  });

  it("puts the CORS headers on answers, errors included", async () => {
    const ok = await fetch(`${stashd.queue.url}/v2/keys`, {
      headers: { authorization: `Bearer ${stashd.queue.token}`, origin: "https://app.example" },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("*");
    expect(allowed(ok, "access-control-expose-headers")).toContain("ratelimit-remaining");
    const refused = await fetch(`${stashd.queue.url}/v2/keys`, {
      headers: { origin: "https://app.example" },
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
    expect(await refused.json()).toHaveProperty("error");
  });
});

describe("CORS on the KV gateway", () => {
  it("allows Upstash-Telemetry-Retry, which @upstash/redis sends on a retry", async () => {
    const asked = "authorization,content-type,upstash-telemetry-sdk,upstash-telemetry-retry";
    const res = await preflight(`${stashd.kv.url}/pipeline`, "POST", asked);
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(allowed(res, "access-control-allow-headers")).toEqual(
      expect.arrayContaining(asked.split(",")),
    );
    expect(allowed(res, "access-control-expose-headers")).toEqual(["upstash-sync-token"]);
  });

  it("keeps its fixed header list: a header no SDK sends is not allowed", async () => {
    const res = await preflight(`${stashd.kv.url}/`, "POST", "x-custom");
    expect(res.status).toBe(204);
    expect(allowed(res, "access-control-allow-headers")).not.toContain("x-custom");
  });
});
