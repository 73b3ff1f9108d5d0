import { describe, expect, it } from "vitest";
import { bodyOf, command, useGateway } from "./helpers.js";

const { stashd } = useGateway();

describe("command in the path", () => {
  it("runs GET path commands, case-insensitive names", async () => {
    expect(await bodyOf(await stashd().kvFetch("/set/pf:a/hello", { method: "GET" }))).toEqual({
      result: "OK",
    });
    expect(await bodyOf(await stashd().kvFetch("/GET/pf:a", { method: "GET" }))).toEqual({
      result: "hello",
    });
  });

  it("appends a POST body as the last argument, then query fields", async () => {
    const value = '{"raw": "json \\n value"}';
    const res = await stashd().kvFetch("/set/pf:body?EX=100", { method: "POST", body: value });
    expect(await bodyOf(res)).toEqual({ result: "OK" });
    expect(await command(stashd(), ["GET", "pf:body"])).toEqual({
      status: 200,
      body: { result: value },
    });
    const ttl = await command(stashd(), ["TTL", "pf:body"]);
    expect(ttl.body).toMatchObject({ result: expect.any(Number) });
    expect((ttl.body as { result: number }).result).toBeGreaterThan(90);
  });

  it("treats PUT like POST", async () => {
    await stashd().kvFetch("/set/pf:put", { method: "PUT", body: "put-value" });
    expect(await command(stashd(), ["GET", "pf:put"])).toEqual({
      status: 200,
      body: { result: "put-value" },
    });
  });

  it("answers HEAD with the status and headers only", async () => {
    const res = await stashd().kvFetch("/get/pf:a", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe("");
  });

  it("percent-decodes each segment on its own", async () => {
    await stashd().kvFetch("/set/pf%2Fslash/a%20b%2Bc+d", { method: "GET" });
    expect(await command(stashd(), ["GET", "pf/slash"])).toEqual({
      status: 200,
      body: { result: "a b+c+d" },
    });
  });

  it("keeps _token out of the arguments and accepts it as the token", async () => {
    const res = await stashd().kvFetch(`/set/pf:tok/v?_token=${stashd().kv.token}`, {
      method: "GET",
      token: null,
    });
    expect(await bodyOf(res)).toEqual({ result: "OK" });
  });

  it("refuses other methods with 405 and a JSON error", async () => {
    const res = await stashd().kvFetch("/get/pf:a", { method: "DELETE" });
    expect(res.status).toBe(405);
    expect(await bodyOf(res)).toEqual({ error: expect.stringContaining("not allowed") });
  });

  it("answers CORS preflights", async () => {
    const res = await stashd().kvFetch("/", { method: "OPTIONS", token: null });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-headers")).toContain("upstash-encoding");
  });
});

describe("JSON body", () => {
  it("does not require a JSON content type", async () => {
    const res = await stashd().kvFetch("/", {
      body: '["SET","pf:form","x"]',
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(await bodyOf(res)).toEqual({ result: "OK" });
  });

  it("keeps numbers' exact digits and sends booleans as text", async () => {
    await command(stashd(), ["SET", "pf:num", 1.5]);
    expect((await command(stashd(), ["GET", "pf:num"])).body).toEqual({ result: "1.5" });
    const res = await stashd().kvFetch("/", { body: '["SET","pf:exp",1.50e3]' });
    expect(res.status).toBe(200);
    expect((await command(stashd(), ["GET", "pf:exp"])).body).toEqual({ result: "1.50e3" });
    await command(stashd(), ["SET", "pf:bool", true]);
    expect((await command(stashd(), ["GET", "pf:bool"])).body).toEqual({ result: "true" });
  });

  it("decodes JSON string escapes and unicode", async () => {
    await command(stashd(), ["SET", "pf:uni", 'tab\t"quote" ünïcødé 🚀']);
    expect((await command(stashd(), ["GET", "pf:uni"])).body).toEqual({
      result: 'tab\t"quote" ünïcødé 🚀',
    });
  });

  it.each([
    ["null", '["SET","k",null]'],
    ["object", '["SET","k",{"a":1}]'],
    ["nested array", '["SET","k",["a"]]'],
    ["invalid JSON", '["SET","k"'],
    ["not an array", '{"cmd":"GET"}'],
    ["empty array", "[]"],
  ])("refuses %s with 400 and a JSON error", async (_what, body) => {
    const res = await stashd().kvFetch("/", { body });
    expect(res.status).toBe(400);
    // The body was read whole (even if node:http had not seen its end yet): the connection stays.
    expect(res.headers.get("connection")).not.toBe("close");
    expect(await bodyOf(res)).toEqual({ error: expect.stringMatching(/^ERR /) });
  });

  it("answers GET / without a command with a 400", async () => {
    const res = await stashd().kvFetch("/", { method: "GET" });
    expect(res.status).toBe(400);
  });
});
