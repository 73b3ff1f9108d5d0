import { createHash } from "node:crypto";
import { Receiver } from "@upstash/qstash";
import { describe, expect, it } from "vitest";
import { parseDuration, parseRetryAfter } from "../../src/queue/domain/duration.js";
import { parseRedact } from "../../src/queue/domain/publish-options.js";
import { compileRetryDelay } from "../../src/queue/domain/retry-delay.js";
import { retryDelayMs } from "../../src/queue/domain/retry-policy.js";
import { signDelivery } from "../../src/queue/delivery/signer.js";

describe("durations", () => {
  it("parses d/h/m/s groups and bare seconds", () => {
    expect(parseDuration("1d10h30m", "x")).toBe(((24 + 10) * 60 + 30) * 60_000);
    expect(parseDuration("50s", "x")).toBe(50_000);
    expect(parseDuration("30", "x")).toBe(30_000);
    expect(() => parseDuration("10x", "x")).toThrow(/invalid x/);
  });

  it("parses Retry-After as seconds, Go durations and dates", () => {
    expect(parseRetryAfter("0", 0)).toBe(0);
    expect(parseRetryAfter("6m5s", 0)).toBe(365_000);
    expect(parseRetryAfter("1500ms", 0)).toBe(1500);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:10 GMT", now)).toBe(10_000);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
  });
});

describe("retry delay expressions", () => {
  it("evaluates the spec's examples", () => {
    expect(compileRetryDelay("1000")(5)).toBe(1000);
    expect(compileRetryDelay("1000 * (1 + retried)")(2)).toBe(3000);
    expect(compileRetryDelay("pow(2, retried) * 1000")(3)).toBe(8000);
    expect(compileRetryDelay("max(1000, pow(2, retried) * 100)")(1)).toBe(1000);
    expect(compileRetryDelay("-retried + 10")(4)).toBe(6);
  });

  it("refuses bad expressions", () => {
    for (const bad of ["", "pow(2,", "foo(1)", "1 +", "retried retried", "min(1)"]) {
      expect(() => compileRetryDelay(bad), bad).toThrow(/Retry-Delay/);
    }
  });

  it("uses Retry-After up to a day, else the default back-off", () => {
    const res = (h: Record<string, string[]>) => ({
      status: 429,
      header: h,
      body: Buffer.alloc(0),
    });
    expect(retryDelayMs(res({ "Retry-After": ["3"] }), 0, undefined, 1000, 0)).toBe(3000);
    expect(retryDelayMs(res({ "Retry-After": ["200000"] }), 0, undefined, 1000, 0)).toBe(
      Math.round(Math.exp(2.5) * 1000),
    );
    expect(retryDelayMs(res({}), 9, undefined, 1000, 0)).toBe(86_400_000);
    expect(retryDelayMs(res({}), 1, "100 * retried", 1000, 0)).toBe(100);
  });
});

describe("redaction fields", () => {
  it("accepts header/headers, [Name] and spaces", () => {
    expect(parseRedact("body,header[Authorization]")).toEqual({
      body: true,
      allHeaders: false,
      headers: ["authorization"],
    });
    expect(parseRedact("headers, body")).toEqual({ body: true, allHeaders: true, headers: [] });
    expect(() => parseRedact("cookies")).toThrow();
  });
});

describe("signature", () => {
  it("is an HS256 JWT with the spec's claims", () => {
    const jwt = signDelivery("sig_key", "http://x/y", Buffer.from("hi"), 1_700_000_000_000);
    const [header, payload] = jwt.split(".").map((p) => Buffer.from(p, "base64url").toString());
    expect(JSON.parse(header ?? "")).toEqual({ alg: "HS256", typ: "JWT" });
    const claims = JSON.parse(payload ?? "") as Record<string, unknown>;
    const hash = createHash("sha256").update("hi").digest("base64url");
    expect(claims).toMatchObject({
      iss: "Upstash",
      sub: "http://x/y",
      iat: 1_700_000_000,
      exp: 1_700_000_300,
      nbf: 0,
    });
    expect(String(claims["body"]).replace(/=+$/, "")).toBe(hash);
    expect(String(claims["jti"])).toMatch(/^jwt_[A-Za-z0-9]{28}$/);
  });

  it("writes the claims JSON byte for byte as JSON.stringify of the claims object did", () => {
    // The claims are written out as text (signer.ts): a URL with characters JSON escapes must
    // come out as it did and verify with the SDK's Receiver against the exact URL called.
    const url = 'http://x/p?q="a"&b=\u00e9\\&c=\u2028';
    const body = Buffer.from("{}");
    const jwt = signDelivery("sig_key", url, body, 1_700_000_000_123);
    const payload = Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString();
    const claims = JSON.parse(payload) as Record<string, unknown>;
    const hash = `${createHash("sha256").update(body).digest("base64url")}=`;
    const asObject = {
      iss: "Upstash",
      sub: url,
      exp: 1_700_000_300,
      nbf: 0,
      iat: 1_700_000_000,
      jti: claims["jti"],
      body: hash,
    };
    expect(payload).toBe(JSON.stringify(asObject));
  });

  it("verifies with the SDK's Receiver", async () => {
    const url = "http://127.0.0.1:1/a/b?c=d&e=é";
    const body = "payload é";
    const jwt = signDelivery("sig_current", url, Buffer.from(body), Date.now());
    const receiver = new Receiver({ currentSigningKey: "sig_current", nextSigningKey: "sig_next" });
    await expect(receiver.verify({ signature: jwt, body, url })).resolves.toBe(true);
  });
});
