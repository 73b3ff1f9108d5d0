import { describe, expect, it } from "vitest";
import { encodeLogCursor, parseLogCursor } from "./log-cursor.js";

describe("log cursors", () => {
  it("round-trips every stream id and partition through the all-digit form", () => {
    const cases: [string, number][] = [
      ["1712345678901-0", 0],
      ["1712345678901-12", 3],
      ["1712345678901-18446744073709551615", 63],
      ["5-7", 1],
    ];
    for (const [id, part] of cases) {
      const cursor = encodeLogCursor(id, part);
      expect(cursor).toMatch(/^\d{18,}$/);
      expect(Number(cursor) > 0).toBe(true);
      expect(parseLogCursor(cursor)).toEqual({ kind: "after", id, part });
    }
  });

  it("reads a short number as a time and keeps the stream-id forms", () => {
    expect(parseLogCursor("1712345678901")).toEqual({ kind: "time", ms: "1712345678901" });
    expect(parseLogCursor("0")).toEqual({ kind: "time", ms: "0" });
    expect(parseLogCursor("17-3")).toEqual({ kind: "after", id: "17-3", part: -1 });
    expect(parseLogCursor("17-3~2")).toEqual({ kind: "after", id: "17-3", part: 2 });
  });

  it("refuses other strings", () => {
    for (const bad of ["", "x", "1.5", "1e21", "17-3~", "99999999999999999", "1-2-3"]) {
      expect(() => parseLogCursor(bad), bad).toThrow("invalid cursor");
    }
  });
});
