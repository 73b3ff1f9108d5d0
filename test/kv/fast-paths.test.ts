import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { useGateway } from "./helpers.js";

/**
 * The KV gateway's fast paths answer byte for byte what its general path would, for every reply
 * shape (strings, invalid UTF-8, escapes, integers, nil, simple strings, arrays, errors, a value
 * too large to render at once, replies past the max reply size) in each reply encoding (JSON,
 * base64, RESP2). The fast paths (docs/architecture.md, "src/kv"):
 * - a pipeline whose commands all go to Redis as they came is answered from RawReplies (no Reply
 *   object per reply: src/shared/redis/raw-replies.ts, src/kv/reply/reply-bytes.ts);
 * - a `/pipeline` body of plain ASCII strings is sent to Redis straight from its bytes
 *   (src/kv/fast/encoded-pipeline.ts);
 * - a command name the policy never refuses skips the policy and gateway steps, decided once per
 *   name and casing (src/kv/fast/name-cache.ts, `nameSteps` in src/kv/commands/execute.ts);
 * - a single JSON command of plain strings is read without the full reader (`parsePlainCommand`
 *   in src/kv/parse/body-args.ts), and a small reply is rendered whole rather than in pieces;
 * - a pipeline of at most one slice is rendered at once, a longer one slice by slice.
 * Each is pinned against the same commands made to take the general path: a refused command at
 * the pipeline's end (answered by stashd, so nothing else changes), the commands sent one at a
 * time, a JSON escape in the body (which the fast readers leave alone), other casings of the
 * names, and a long pipeline against its slices sent as pipelines of their own.
 */
const { stashd } = useGateway();

const FORMATS: [string, Record<string, string>][] = [
  ["JSON", {}],
  ["base64", { "upstash-encoding": "base64" }],
  ["RESP2", { "upstash-response-format": "resp2" }],
];
/** Answered by stashd itself (a connection-state command), so it makes the pipeline general. */
const REFUSED = ["SELECT", "1"];

type Command = (string | Buffer)[];

/** A JSON body of commands; Buffer arguments keep their bytes (invalid UTF-8 included). */
function body(commands: Command[] | Command): Buffer {
  const json = (a: string | Buffer): Buffer =>
    Buffer.isBuffer(a)
      ? Buffer.concat([Buffer.from('"'), a, Buffer.from('"')])
      : Buffer.from(JSON.stringify(a));
  const list = (items: Buffer[]): Buffer =>
    Buffer.concat([
      Buffer.from("["),
      ...items.flatMap((b, i) => (i > 0 ? [Buffer.from(","), b] : [b])),
      Buffer.from("]"),
    ]);
  const isList = Array.isArray(commands[0]);
  return isList
    ? list((commands as Command[]).map((c) => list(c.map(json))))
    : list((commands as Command).map(json));
}

async function post(
  s: TestStashd,
  path: string,
  payload: Buffer,
  headers: Record<string, string>,
): Promise<Buffer> {
  const res = await s.kvFetch(path, { body: payload, headers });
  return Buffer.from(await res.arrayBuffer());
}

/** The pipeline's reply, the general path's (minus the refused item), and the singles joined. */
async function threeWays(
  s: TestStashd,
  commands: Command[],
  headers: Record<string, string>,
): Promise<{ fast: Buffer; general: Buffer; singles: Buffer }> {
  const resp2 = headers["upstash-response-format"] === "resp2";
  const fast = await post(s, "/pipeline", body(commands), headers);
  const withRefused = await post(s, "/pipeline", body([...commands, REFUSED]), headers);
  const refused = await post(s, "/", body(REFUSED), headers);
  const general = resp2
    ? withRefused.subarray(0, withRefused.length - refused.length)
    : Buffer.concat([
        withRefused.subarray(0, withRefused.length - refused.length - 2),
        Buffer.from("]"),
      ]);
  const each: Buffer[] = [];
  for (const c of commands) each.push(await post(s, "/", body(c), headers));
  const singles = resp2
    ? Buffer.concat(each)
    : Buffer.concat([
        Buffer.from("["),
        Buffer.from(each.map((b) => b.toString("latin1")).join(","), "latin1"),
        Buffer.from("]"),
      ]);
  expect(
    withRefused.subarray(withRefused.length - refused.length - (resp2 ? 0 : 1)).toString("latin1"),
  ).toBe(resp2 ? refused.toString("latin1") : `${refused.toString("latin1")}]`);
  return { fast, general, singles };
}

const INVALID_UTF8 = Buffer.from([0x61, 0xff, 0xfe, 0x80, 0x62]);

/**
 * Values of random bytes and lengths around the renderers' limits (a fixed seed: replayable):
 * printable ASCII (copied as they are), any byte but a quote, backslash or control character
 * (raw in the body: invalid UTF-8 among them), and ASCII with control characters, quotes and
 * backslashes (as JSON escapes in the body).
 */
const RANDOM_VALUES: (string | Buffer)[] = (() => {
  let x = 2026;
  const next = (n: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  const raw = (b: number): number => (b < 0x20 || b === 0x22 || b === 0x5c ? 0x61 : b);
  return Array.from({ length: 42 }, (_, i) => {
    const value = Buffer.alloc([0, 1, 2, 3, 9, 10, 63, 64, 65, 100][i % 10] as number);
    for (let j = 0; j < value.length; j++) {
      value[j] = i % 3 === 0 ? raw(0x20 + next(0x5f)) : i % 3 === 1 ? raw(next(256)) : next(0x80);
    }
    return i % 3 === 2 ? value.toString("latin1") : value;
  });
})();

beforeAll(async () => {
  const s = stashd();
  const set: Command[] = [
    ["SET", "pr:empty", ""],
    ["SET", "pr:v", "v"],
    ["SET", "pr:ok", "OK"],
    ["SET", "pr:bytes", INVALID_UTF8],
    ["SET", "pr:escapes", 'a"b\\c\td\u0001e\u007f'],
    ["SET", "pr:unicode", "ü€😀"],
    ["SET", "pr:64", "x".repeat(64)],
    ["SET", "pr:65", "y".repeat(65)],
    ["SET", "pr:large", "L".repeat(100_000)],
    ["SET", "pr:int", "-9223372036854775808"],
    ["RPUSH", "pr:list", "a", "", "c"],
    ...RANDOM_VALUES.map((v, i): Command => ["SET", `pr:random:${i}`, v]),
  ];
  const res = await s.kvFetch("/pipeline", { body: body(set) });
  expect(res.status).toBe(200);
});

const SIMPLE: Command[] = [
  ["GET", "pr:empty"],
  ["GET", "pr:v"],
  ["GET", "pr:ok"],
  ["GET", "pr:bytes"],
  ["GET", "pr:escapes"],
  ["GET", "pr:unicode"],
  ["GET", "pr:64"],
  ["GET", "pr:65"],
  ["GET", "pr:missing"],
  ["GET", "pr:int"],
  ["STRLEN", "pr:v"],
  ["EXISTS", "pr:missing"],
  ["PING"],
  ["TYPE", "pr:v"],
  ["ECHO", "OK"],
];

describe.each(FORMATS)("pipeline replies as %s", (_, headers) => {
  it.each([
    ["strings, integers, nil and simple strings", SIMPLE],
    [
      "arrays among them",
      [...SIMPLE, ["LRANGE", "pr:list", "0", "-1"], ["MGET", "pr:v", "pr:missing", "pr:bytes"]],
    ],
    [
      "an error among them",
      [
        ["GET", "pr:v"],
        ["INCR", "pr:v"],
        ["GET", "pr:missing"],
        ["LPOP", "pr:v"],
      ],
    ],
    [
      "a value too large to render at once",
      [
        ["GET", "pr:v"],
        ["GET", "pr:large"],
        ["GET", "pr:bytes"],
      ],
    ],
    ["one command", [["GET", "pr:bytes"]]],
    [
      "random values, nil and integers",
      RANDOM_VALUES.flatMap((_v, i): Command[] => [
        ["GET", `pr:random:${i}`],
        i % 3 ? ["STRLEN", `pr:random:${i}`] : ["GET", `pr:missing:${i}`],
      ]),
    ],
  ] as [string, Command[]][])(
    "are the same bytes on the fast and the general path: %s",
    async (_name, commands) => {
      const { fast, general, singles } = await threeWays(stashd(), commands, headers);
      expect(fast.toString("latin1")).toBe(general.toString("latin1"));
      expect(fast.toString("latin1")).toBe(singles.toString("latin1"));
    },
  );
});

describe.each(FORMATS)("a pipeline body read straight into RESP, as %s", (_, headers) => {
  it("answers as the same body with an escape in it (read by the general path)", async () => {
    const plain = JSON.stringify([...SIMPLE.filter((c) => !c.some(Buffer.isBuffer)), ["DEL", "x"]]);
    // `"GET"` spelled `"G\u0045T"`: the same command, but no longer a body the encoder takes.
    const escaped = plain.replace('"GET"', '"G\\u0045T"');
    expect(escaped).not.toBe(plain);
    const straight = await post(stashd(), "/pipeline", Buffer.from(plain), headers);
    const general = await post(stashd(), "/pipeline", Buffer.from(escaped), headers);
    expect(straight.toString("latin1")).toBe(general.toString("latin1"));
  });
});

describe("pipeline replies past the max reply size", () => {
  let small: TestStashd | undefined;
  beforeAll(async () => {
    small = await startStashd({ kvRedisUrl: stashd().config.kvRedisUrl, kvMaxReplyBytes: 1000 });
  });
  afterAll(async () => {
    await small?.stop();
  });

  it.each(FORMATS)("answer the same on both paths, mid-pipeline (%s)", async (_, headers) => {
    const s = small as TestStashd;
    await s.kvFetch("/", { body: JSON.stringify(["SET", "pr:300", "z".repeat(300)]) });
    // A reply alone over the budget (its stand-in costs 48 bytes), then replies that use the
    // budget up: 55 + 48 + 2 × 356 of 1000 bytes, and each stand-in after them 48 more.
    const commands: Command[] = [
      ["GET", "pr:v"],
      ["GET", "pr:large"],
      ...Array.from({ length: 6 }, (): Command => ["GET", "pr:300"]),
      ["GET", "pr:v"],
    ];
    const fast = await post(s, "/pipeline", body(commands), headers);
    const withRefused = await post(s, "/pipeline", body([...commands, REFUSED]), headers);
    const text = fast.toString("latin1");
    expect(
      withRefused
        .toString("latin1")
        .startsWith(headers["upstash-response-format"] ? text : text.slice(0, -1)),
    ).toBe(true);
    expect(text).toContain(
      "ERR reply too large: this request's replies exceed the max reply size of 1000 bytes",
    );
    if (!headers["upstash-response-format"]) {
      const items = JSON.parse(text) as { result?: unknown; error?: string }[];
      expect(items.map((i) => ("error" in i ? "error" : "result"))).toEqual([
        "result",
        "error",
        "result",
        "result",
        "error",
        "error",
        "error",
        "error",
        "error",
      ]);
    }
  });
});

describe.each(FORMATS)("single commands as %s", (_, headers) => {
  const SHAPES: [string, Command][] = [
    ["a string", ["GET", "pr:escapes"]],
    ["invalid UTF-8", ["GET", "pr:bytes"]],
    ["nil", ["GET", "pr:missing"]],
    ["an integer", ["STRLEN", "pr:unicode"]],
    ["a simple string", ["TYPE", "pr:list"]],
    ["OK", ["GET", "pr:ok"]],
    ["an array", ["LRANGE", "pr:list", "0", "-1"]],
    ["an error", ["INCR", "pr:v"]],
    ["a value too large to render at once", ["GET", "pr:large"]],
  ];

  it.each(SHAPES)(
    "answer %s the same from the plain reader, the full reader and the path",
    async (_shape, argv) => {
      const plain = body(argv);
      // `"GET"` spelled `"G\u0045T"` (and so on): the same command for the full reader only.
      const name = argv[0] as string;
      const escaped = Buffer.from(
        plain
          .toString("latin1")
          .replace(
            `"${name}"`,
            `"${name[0]}\\u00${name.charCodeAt(1).toString(16)}${name.slice(2)}"`,
          ),
        "latin1",
      );
      expect(escaped.equals(plain)).toBe(false);
      const fast = await post(stashd(), "/", plain, headers);
      const general = await post(stashd(), "/", escaped, headers);
      expect(fast.toString("latin1")).toBe(general.toString("latin1"));
      if (!argv.some(Buffer.isBuffer)) {
        const path = "/" + argv.map((a) => encodeURIComponent(a as string)).join("/");
        const viaPath = await post(stashd(), path, Buffer.alloc(0), headers);
        expect(viaPath.toString("latin1")).toBe(fast.toString("latin1"));
      }
    },
  );
});

describe.each(FORMATS)("command names in other casings, as %s", (_, headers) => {
  it("answer as the upper-case names, in pipelines and single commands", async () => {
    const commands = SIMPLE.filter((c) => !c.some(Buffer.isBuffer));
    const casings = [
      (n: string) => n.toLowerCase(),
      (n: string) => n[0] + n.slice(1).toLowerCase(),
    ];
    const upper = await post(stashd(), "/pipeline", body(commands), headers);
    for (const casing of casings) {
      const renamed = commands.map(([n, ...rest]) => [casing(n as string), ...rest]);
      const other = await post(stashd(), "/pipeline", body(renamed), headers);
      expect(other.toString("latin1")).toBe(upper.toString("latin1"));
      const single = await post(stashd(), "/", body(renamed[0] as Command), headers);
      const upperSingle = await post(stashd(), "/", body(commands[0] as Command), headers);
      expect(single.toString("latin1")).toBe(upperSingle.toString("latin1"));
    }
  });
});

describe.each(FORMATS)("a pipeline longer than one slice, as %s", (_, headers) => {
  it("answers as its slices sent as pipelines of their own, joined", async () => {
    // 1000 commands per slice (SLICE in src/kv/commands/execute.ts); a large reply in each.
    const commands = Array.from({ length: 1500 }, (_, i): Command =>
      i % 700 === 5
        ? ["GET", "pr:large"]
        : i % 3 === 0
          ? ["GET", "pr:unicode"]
          : ["STRLEN", "pr:v"],
    );
    const whole = await post(stashd(), "/pipeline", body(commands), headers);
    const first = await post(stashd(), "/pipeline", body(commands.slice(0, 1000)), headers);
    const rest = await post(stashd(), "/pipeline", body(commands.slice(1000)), headers);
    const joined =
      headers["upstash-response-format"] === "resp2"
        ? Buffer.concat([first, rest])
        : Buffer.concat([first.subarray(0, -1), Buffer.from(","), rest.subarray(1)]);
    expect(whole.length).toBe(joined.length);
    expect(whole.equals(joined)).toBe(true);
  });
});
