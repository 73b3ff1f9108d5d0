import { describe, expect, it } from "vitest";
import { bodyOf, command, useGateway } from "./helpers.js";

const { stashd } = useGateway();
const b64 = (s: string): string => Buffer.from(s).toString("base64");

describe("reply shapes", () => {
  it("renders RESP2 shapes: integers, nil, nested arrays", async () => {
    await command(stashd(), ["RPUSH", "rp:list", "a", "b"]);
    expect((await command(stashd(), ["LLEN", "rp:list"])).body).toEqual({ result: 2 });
    expect((await command(stashd(), ["GET", "rp:none"])).body).toEqual({ result: null });
    expect((await command(stashd(), ["MGET", "rp:none", "rp:none"])).body).toEqual({
      result: [null, null],
    });
    await command(stashd(), ["XADD", "rp:stream", "1-1", "f", "v"]);
    expect((await command(stashd(), ["XRANGE", "rp:stream", "-", "+"])).body).toEqual({
      result: [["1-1", ["f", "v"]]],
    });
  });

  it("replaces invalid UTF-8 with U+FFFD without base64", async () => {
    await stashd().kvFetch("/set/rp:bin/%FF%FEok", { method: "GET" });
    expect((await command(stashd(), ["GET", "rp:bin"])).body).toEqual({ result: "\uFFFD\uFFFDok" });
  });

  it("emits integer replies beyond 2^53 with their exact digits", async () => {
    await command(stashd(), ["SET", "rp:max", "9223372036854775806"]);
    const res = await stashd().kvFetch("/", { body: '["INCR","rp:max"]' });
    expect(await res.text()).toBe('{"result":9223372036854775807}');
  });
});

describe("Upstash-Encoding: base64", () => {
  const headers = { "upstash-encoding": "base64" };

  it("encodes every string except a top-level OK", async () => {
    expect((await command(stashd(), ["SET", "rp:e", "OK"], { headers })).body).toEqual({
      result: "OK",
    });
    expect((await command(stashd(), ["GET", "rp:e"], { headers })).body).toEqual({ result: "OK" });
    expect((await command(stashd(), ["MGET", "rp:e", "rp:none"], { headers })).body).toEqual({
      result: [b64("OK"), null],
    });
    expect((await command(stashd(), ["PING"], { headers })).body).toEqual({ result: b64("PONG") });
    expect((await command(stashd(), ["TYPE", "rp:e"], { headers })).body).toEqual({
      result: b64("string"),
    });
  });

  it("keeps binary values byte-exact", async () => {
    await stashd().kvFetch("/set/rp:raw/%00%FF%80", { method: "GET" });
    expect((await command(stashd(), ["GET", "rp:raw"], { headers })).body).toEqual({
      result: Buffer.from([0, 255, 128]).toString("base64"),
    });
  });

  it("never encodes errors", async () => {
    const res = await command(stashd(), ["INCR", "rp:e"], { headers });
    expect(res).toEqual({
      status: 400,
      body: { error: "ERR value is not an integer or out of range" },
    });
  });
});

describe("Upstash-Response-Format: resp2", () => {
  it("returns the backend's RESP bytes", async () => {
    await command(stashd(), ["SET", "rp:r", "bar"]);
    const res = await stashd().kvFetch("/", {
      body: '["GET","rp:r"]',
      headers: { "upstash-response-format": "resp2" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(await res.text()).toBe("$3\r\nbar\r\n");
  });

  it("concatenates pipeline replies, errors included", async () => {
    const res = await stashd().kvFetch("/pipeline", {
      body: '[["SET","rp:p","1"],["INCR","rp:p"],["HGET","rp:p","f"]]',
      headers: { "upstash-response-format": "resp2" },
    });
    expect(await res.text()).toBe(
      "+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
  });

  it("refuses an unknown format and resp2 with base64", async () => {
    const bad = await stashd().kvFetch("/", {
      body: '["PING"]',
      headers: { "upstash-response-format": "xml" },
    });
    expect(bad.status).toBe(400);
    expect(await bodyOf(bad)).toEqual({
      error: expect.stringContaining("Upstash-Response-Format"),
    });
    const both = await stashd().kvFetch("/", {
      body: '["PING"]',
      headers: { "upstash-response-format": "resp2", "upstash-encoding": "base64" },
    });
    expect(both.status).toBe(400);
  });
});

describe("upstash-sync-token", () => {
  it("is on every response, changes after writes, and is accepted on requests", async () => {
    const first = await stashd().kvFetch("/", {
      body: '["SET","rp:s","1"]',
      headers: { "upstash-sync-token": "" },
    });
    const t1 = first.headers.get("upstash-sync-token");
    const second = await stashd().kvFetch("/", {
      body: '["INCR","rp:s"]',
      headers: { "upstash-sync-token": t1 ?? "" },
    });
    const t2 = second.headers.get("upstash-sync-token");
    expect(t1).toBeTruthy();
    expect(t2).toBeTruthy();
    expect(t2).not.toBe(t1);
    const unauthorized = await stashd().kvFetch("/", { body: '["PING"]', token: "wrong" });
    expect(unauthorized.headers.get("upstash-sync-token")).toBeTruthy();
  });
});
