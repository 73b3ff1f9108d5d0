import { describe, expect, it } from "vitest";
import { command, useGateway } from "./helpers.js";

/**
 * The VECTOR.* bounds (STASHD_KV_VECTOR_*, docs/vector.md "Limits and settings"), each past its
 * setting answered by a clear `{"error"}` while the gateway goes on serving.
 */
const small = useGateway({
  kvVectorMaxIndexBytes: 24,
  kvVectorMaxTopK: 5,
  kvVectorMaxDimension: 8,
  kvVectorCacheBytes: 64,
});
const slow = useGateway({ kvVectorQueryTimeoutMs: 1 });

const values = (v: number[]): string[] => ["VALUES", String(v.length), ...v.map(String)];

describe("vector limits", () => {
  it("bounds DIM, TOPK, an index's bytes and the memory of the in-process copies", async () => {
    const s = small.stashd();
    expect(await command(s, ["VECTOR.CREATE", "big", "DIM", "9", "METRIC", "DOT"])).toEqual({
      status: 400,
      body: { error: "ERR DIM must be an integer between 1 and 8" },
    });
    await command(s, ["VECTOR.CREATE", "i", "DIM", "3", "METRIC", "DOT"]);
    expect((await command(s, ["VECTOR.ADD", "i", "a", ...values([1, 2, 3])])).body).toEqual({
      result: 1,
    });
    expect((await command(s, ["VECTOR.ADD", "i", "b", ...values([1, 2, 3])])).body).toEqual({
      result: 1,
    });
    expect(await command(s, ["VECTOR.ADD", "i", "c", ...values([1, 2, 3])])).toEqual({
      status: 400,
      body: {
        error: expect.stringMatching(
          /^ERR vector index full: 2 vectors of DIM 3 fill its budget of 24 bytes/,
        ),
      },
    });
    // Replacing a vector needs no more room.
    expect((await command(s, ["VECTOR.ADD", "i", "a", ...values([3, 2, 1])])).body).toEqual({
      result: 0,
    });
    expect(await command(s, ["VECTOR.QUERY", "i", "TOPK", "6", ...values([1, 2, 3])])).toEqual({
      status: 400,
      body: { error: "ERR TOPK must be an integer between 1 and 5" },
    });
    expect(await command(s, ["VECTOR.QUERY", "i", "TOPK", "5", ...values([1, 2, 3])])).toEqual({
      status: 400,
      body: {
        error: expect.stringMatching(/^ERR vector index 'i' needs more than 64 bytes in memory/),
      },
    });
    expect((await command(s, ["VECTOR.COUNT", "i"])).body).toEqual({ result: 2 });
  });

  it("answers a query that waits on a whole load past the time limit with an error", async () => {
    const s = slow.stashd();
    await command(s, ["VECTOR.CREATE", "wide", "DIM", "128", "METRIC", "COSINE"]);
    const vector = Buffer.from(new Float32Array(128).fill(0.5).buffer).toString("base64");
    const body = Array.from({ length: 1500 }, (_, i) => [
      "VECTOR.ADD",
      "wide",
      `v${i}`,
      "BASE64-FP32",
      vector,
    ]);
    expect((await s.kvFetch("/pipeline", { body: JSON.stringify(body) })).status).toBe(200);
    const reply = await command(s, ["VECTOR.QUERY", "wide", "TOPK", "1", "BASE64-FP32", vector]);
    expect(reply).toEqual({
      status: 400,
      body: {
        error: expect.stringMatching(
          /^ERR vector index 'wide' is still loading into this stashd process/,
        ),
      },
    });
    expect((await command(s, ["PING"])).body).toEqual({ result: "PONG" });
  });
});
