import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import {
  laneCount,
  settledLaneAnswers,
  portOf,
  RawClient,
  request,
  unchunk,
  useLaneAndNode,
} from "../harness/raw-http.js";
import type { TestStashd } from "../harness/stashd.js";

/**
 * An adversarial review of the KV fast lane (src/shared/http/lane.ts), the hand-written HTTP/1.1
 * parser in front of node:http on the public KV port. node:http alone (STASHD_KV_FAST_LANE=false)
 * is the reference: for each attack, the same bytes, followed by a harmless request and one that
 * closes the connection, must get the same answers from both gateways (status and body), so the
 * lane never frames a request differently from node:http (request smuggling, desync), never takes
 * what node:http refuses, and every refusal is a JSON `{"error"}`. Then the resource bounds the
 * lane must keep: bytes trickled in, many pipelined requests, a client that never reads.
 */

/** node:http's keep-alive timeout is then 500 ms, the lane's wait for a partial request too. */
const REQUEST_TIMEOUT_MS = 1000;
/** The largest reply (STASHD_KV_MAX_REPLY_BYTES), small so that a test can pass it. */
const MAX_REPLY = 256 * 1024;

const { lane, plain } = useLaneAndNode({
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  kvMaxReplyBytes: MAX_REPLY,
});

/** `["ECHO","a"]`: 12 bytes. */
const BODY = '["ECHO","a"]';
/** A whole lane request hidden in a body: executed only by a parser that frames it so. */
const HIDDEN = `POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer TOKEN\r\nContent-Length: 27\r\n\r\n["SET","sec:hidden","bad"]`;

/** A request from raw lines (`TOKEN` stands for the gateway's standard token) and a body. */
function raw(lines: string[], body = BODY): string {
  return `${lines.join("\r\n")}\r\n\r\n${body}`;
}

/** The usual head of a lane request, then `extra` lines. */
function lanesHead(extra: string[], first = "POST / HTTP/1.1"): string[] {
  return [first, "Host: x", "Authorization: Bearer TOKEN", ...extra];
}

/** [attack, its bytes] */
const ATTACKS: [string, string][] = [
  ["two equal Content-Length", raw(lanesHead(["Content-Length: 12", "Content-Length: 12"]))],
  [
    "two different Content-Length",
    raw(lanesHead(["Content-Length: 12", "Content-Length: 0"])) + HIDDEN,
  ],
  ["Content-Length with a sign", raw(lanesHead(["Content-Length: +12"]))],
  ["Content-Length negative", raw(lanesHead(["Content-Length: -1"]))],
  ["Content-Length with leading zeros", raw(lanesHead(["Content-Length: 0012"]))],
  ["Content-Length in hex", raw(lanesHead(["Content-Length: 0xc"]))],
  ["Content-Length as a list", raw(lanesHead(["Content-Length: 12, 12"]))],
  ["Content-Length with spaces inside", raw(lanesHead(["Content-Length: 1 2"]))],
  ["Content-Length with spaces and tabs around", raw(lanesHead(["Content-Length: \t 12 \t"]))],
  ["Content-Length then a bare CR", raw(lanesHead(["Content-Length: 12\r"]))],
  ["Content-Length then a vertical tab", raw(lanesHead(["Content-Length: 12\x0b"]))],
  ["Content-Length after a form feed", raw(lanesHead(["Content-Length:\x0c12"]))],
  ["Content-Length then a latin-1 no-break space", raw(lanesHead(["Content-Length: 12\xa0"]))],
  ["Content-Length then NUL", raw(lanesHead(["Content-Length: 12\x00"]))],
  ["Content-Length too large", raw(lanesHead(["Content-Length: 9999999999999999999999"]))],
  [
    "Content-Length and Transfer-Encoding",
    raw(
      lanesHead(["Content-Length: 5", "Transfer-Encoding: chunked"]),
      `c\r\n${BODY}\r\n0\r\n\r\n`,
    ),
  ],
  ...["chunked ,", "Chunked", "\tchunked", " chunked, chunked", "identity", "chunked\x0b"].map(
    (te): [string, string] => [
      `Transfer-Encoding: ${JSON.stringify(te)} with Content-Length`,
      raw(
        lanesHead([`Transfer-Encoding: ${te}`, "Content-Length: 5"]),
        `c\r\n${BODY}\r\n0\r\n\r\n`,
      ),
    ],
  ),
  ["an obs-fold line", raw(lanesHead(["X-A: a", " folded", "Content-Length: 12"]))],
  ["Content-Length folded", raw(lanesHead(["Content-Length:", " 12"]))],
  ["a tab-folded line", raw(lanesHead(["X-A: a", "\tfolded", "Content-Length: 12"]))],
  ["bare LF line ends", `${lanesHead(["Content-Length: 12"]).join("\n")}\n\n${BODY}`],
  [
    "a bare LF inside the head",
    raw(lanesHead(["X-A: a\nContent-Length: 0", "Content-Length: 12"])),
  ],
  ["a bare LF before the head's end", raw(lanesHead(["Content-Length: 12", "X-A: a\n"]))],
  ["a bare CR inside a value", raw(lanesHead(["X-A: a\rb", "Content-Length: 12"]))],
  ["NUL in a value", raw(lanesHead(["X-A: a\x00b", "Content-Length: 12"]))],
  ["NUL in a name", raw(lanesHead(["X\x00A: a", "Content-Length: 12"]))],
  ["DEL in a value", raw(lanesHead(["X-A: a\x7fb", "Content-Length: 12"]))],
  ["a control byte in a name", raw(lanesHead(["X\x01A: a", "Content-Length: 12"]))],
  ["a space before the colon", raw(lanesHead(["Content-Length : 12"]))],
  ["a space before the colon of Host", raw(["POST / HTTP/1.1", "Host : x", "Content-Length: 12"])],
  ["a line without a colon", raw(lanesHead(["nocolon", "Content-Length: 12"]))],
  ["an empty name", raw(lanesHead([": a", "Content-Length: 12"]))],
  ["an absolute-form target", raw(lanesHead(["Content-Length: 12"], "POST http://x/ HTTP/1.1"))],
  ["a query", raw(lanesHead(["Content-Length: 12"], "POST /?x HTTP/1.1"))],
  [
    "the token in the query",
    raw(["POST /?_token=TOKEN HTTP/1.1", "Host: x", "Content-Length: 12"]),
  ],
  ["a double slash", raw(lanesHead(["Content-Length: 12"], "POST // HTTP/1.1"))],
  ["/pipeline/", raw(lanesHead(["Content-Length: 2"], "POST /pipeline/ HTTP/1.1"), "[]")],
  ["HTTP/1.0", raw(lanesHead(["Content-Length: 12"], "POST / HTTP/1.0"))],
  ["HTTP/1.10", raw(lanesHead(["Content-Length: 12"], "POST / HTTP/1.10"))],
  ["a lowercase method", raw(lanesHead(["Content-Length: 12"], "post / HTTP/1.1"))],
  ["two spaces in the request line", raw(lanesHead(["Content-Length: 12"], "POST  / HTTP/1.1"))],
  ["a space after the version", raw(lanesHead(["Content-Length: 12"], "POST / HTTP/1.1 "))],
  [
    "a long request line",
    raw(lanesHead(["Content-Length: 12"], `POST /${"a".repeat(9000)} HTTP/1.1`)),
  ],
  ["a 9 KiB header", raw(lanesHead([`X-A: ${"a".repeat(9 * 1024)}`, "Content-Length: 12"]))],
  [
    "a 20 KiB header section",
    raw(lanesHead([`X-A: ${"a".repeat(20 * 1024)}`, "Content-Length: 12"])),
  ],
  [
    "100 headers",
    raw(lanesHead([...Array.from({ length: 100 }, (_, i) => `X-${i}: a`), "Content-Length: 12"])),
  ],
  [
    "3000 headers",
    raw(lanesHead([...Array.from({ length: 3000 }, (_, i) => `X-${i}: a`), "Content-Length: 12"])),
  ],
  ["Expect: 100-continue", raw(lanesHead(["Expect: 100-continue", "Content-Length: 12"]))],
  ["Upgrade", raw(lanesHead(["Connection: Upgrade", "Upgrade: websocket", "Content-Length: 12"]))],
  ["Connection: close", raw(lanesHead(["Connection: close", "Content-Length: 12"]))],
  [
    "Connection: keep-alive, close",
    raw(lanesHead(["Connection: keep-alive, close", "Content-Length: 12"])),
  ],
  ["Connection: Keep-Alive", raw(lanesHead(["Connection: Keep-Alive", "Content-Length: 12"]))],
  [
    "Connection: keep-alive twice",
    raw(lanesHead(["Connection: keep-alive", "Connection: close", "Content-Length: 12"])),
  ],
  ["no Host", raw(["POST / HTTP/1.1", "Authorization: Bearer TOKEN", "Content-Length: 12"])],
  ["two Host", raw(lanesHead(["Host: y", "Content-Length: 12"]))],
  [
    "an empty Host",
    raw(["POST / HTTP/1.1", "Host:", "Authorization: Bearer TOKEN", "Content-Length: 12"]),
  ],
  ["no header at all", raw(["POST / HTTP/1.1"])],
  [
    "a body longer than its Content-Length",
    raw(lanesHead(["Content-Length: 12"]), `${BODY}${HIDDEN}`),
  ],
  ["a body shorter than its Content-Length", raw(lanesHead(["Content-Length: 20"]))],
  ["a command error, then more on the connection", raw(lanesHead(["Content-Length: 6"]), '["GET"')],
  ["an unknown command, then more", raw(lanesHead(["Content-Length: 8"]), '["NOPE"]')],
  ["junk before the request", `\r\n${raw(lanesHead(["Content-Length: 12"]))}`],
  // The fields read byte by byte (lane.ts readFields): names in any case, near misses, limits.
  ["CONTENT-LENGTH in capitals", raw(lanesHead(["CONTENT-LENGTH: 12"]))],
  [
    "two Content-Length in two cases",
    raw(lanesHead(["content-length: 12", "CONTENT-LENGTH: 0"])) + HIDDEN,
  ],
  [
    "a name one byte short of Content-Length",
    raw(lanesHead(["Content-Lengt: 0", "Content-Length: 12"])),
  ],
  [
    "a name one byte off Content-Length",
    raw(lanesHead(["Content~Length: 0", "Content-Length: 12"])),
  ],
  ["Content-Length of seven digits", raw(lanesHead(["Content-Length: 0000012"]))],
  ["Content-Length without a space", raw(lanesHead(["Content-Length:12"]))],
  ["Content-Length after two spaces", raw(lanesHead(["Content-Length:  12"]))],
  ["Content-Length then a tab", raw(lanesHead(["Content-Length: 12\t"]))],
  [
    "TRANSFER-ENCODING in capitals with Content-Length",
    raw(
      lanesHead(["TRANSFER-ENCODING: chunked", "Content-Length: 5"]),
      `c\r\n${BODY}\r\n0\r\n\r\n`,
    ),
  ],
  ["two Host in two cases", raw(lanesHead(["HOST: y", "Content-Length: 12"]))],
  ["eXpEcT in mixed case", raw(lanesHead(["eXpEcT: 100-continue", "Content-Length: 12"]))],
  ["CONNECTION: CLOSE in capitals", raw(lanesHead(["CONNECTION: CLOSE", "Content-Length: 12"]))],
  [
    "Connection: keep-alive between tabs",
    raw(lanesHead(["Connection:\tKEEP-ALIVE\t", "Content-Length: 12"])),
  ],
  [
    "a name of every token byte",
    raw(lanesHead(["!#$%&'*+-.^_`|~09azAZ: a", "Content-Length: 12"])),
  ],
  ["a name with a byte over 0x7f", raw(lanesHead(["X-\xe9: a", "Content-Length: 12"]))],
  ["a name ending in a tab", raw(lanesHead(["Content-Length\t: 12"]))],
  [
    "Upstash-Encoding twice in two cases",
    raw(lanesHead(["Upstash-Encoding: base64", "UPSTASH-ENCODING: base64", "Content-Length: 12"])),
  ],
  [
    "Upstash-Response-Format twice",
    raw(
      lanesHead([
        "Upstash-Response-Format: resp2",
        "upstash-response-format: json",
        "Content-Length: 12",
      ]),
    ),
  ],
  ["a blank line of CR LF LF", `${lanesHead(["Content-Length: 12"]).join("\r\n")}\r\n\n${BODY}`],
  ["a blank line of LF CR LF", `${lanesHead(["Content-Length: 12"]).join("\r\n")}\n\r\n${BODY}`],
  [
    "64 header lines",
    raw(lanesHead([...Array.from({ length: 61 }, (_, i) => `X-${i}: a`), "Content-Length: 12"])),
  ],
  [
    "65 header lines",
    raw(lanesHead([...Array.from({ length: 62 }, (_, i) => `X-${i}: a`), "Content-Length: 12"])),
  ],
];

const ROOT = (token: string, lines: string[]): string =>
  raw(
    ["POST / HTTP/1.1", "Host: x", ...lines, "Content-Length: 12"].map((l) =>
      l.replace("TOKEN", token),
    ),
  );

/** [attack on the token, its lines (TOKEN, RO for the read-only token)] */
const AUTH_ATTACKS: [string, string[]][] = [
  ["no Authorization", []],
  ["lowercase bearer", ["Authorization: bearer TOKEN"]],
  ["BEARER", ["Authorization: BEARER TOKEN"]],
  ["two spaces", ["Authorization: Bearer  TOKEN"]],
  ["a tab", ["Authorization: Bearer\tTOKEN"]],
  ["a trailing space", ["Authorization: Bearer TOKEN "]],
  ["a trailing vertical tab", ["Authorization: Bearer TOKEN\x0b"]],
  ["a trailing form feed", ["Authorization: Bearer TOKEN\x0c"]],
  ["a token and more", ["Authorization: Bearer TOKEN x"]],
  ["no scheme", ["Authorization: TOKEN"]],
  ["Basic", ["Authorization: Basic TOKEN"]],
  [
    "a good then a bad Authorization",
    ["Authorization: Bearer TOKEN", "Authorization: Bearer nope"],
  ],
  [
    "a bad then a good Authorization",
    ["Authorization: Bearer nope", "Authorization: Bearer TOKEN"],
  ],
  ["a token prefix", ["Authorization: Bearer TOKE"]],
  ["the read-only token, writing", ["Authorization: Bearer RO"]],
  ["AUTHORIZATION in capitals", ["AUTHORIZATION: Bearer TOKEN"]],
  [
    "a good then a bad Authorization, in two cases",
    ["authorization: Bearer TOKEN", "AUTHORIZATION: Bearer nope"],
  ],
  [
    "the read-only token and the standard one",
    ["Authorization: Bearer RO", "authorization: Bearer TOKEN"],
  ],
];

/**
 * What a gateway answers to `bytes` then a harmless request then one closing the connection,
 * as `status body` lines, and whether each error body is a JSON `{"error"}`.
 */
async function answers(s: TestStashd, bytes: string): Promise<string[]> {
  const token = s.kv.token;
  const client = new RawClient(portOf(s));
  try {
    const own = bytes.replaceAll("RO", s.kv.readonlyToken).replaceAll("TOKEN", token);
    client.write(Buffer.from(own, "latin1"));
    client.write(request("/", '["ECHO","canary"]', { Authorization: `Bearer ${token}` }));
    client.write(
      request("/", '["ECHO","last"]', { Authorization: `Bearer ${token}`, Connection: "close" }),
    );
    const responses = await client.untilClosed();
    return responses.map((r) => {
      const text = r.toString("latin1");
      const status = text.slice(9, 12);
      const sent = text.slice(text.indexOf("\r\n\r\n") + 4);
      const body = /\r\ntransfer-encoding: chunked/i.test(text) ? unchunk(sent) : sent;
      if (Number(status) >= 400) expect(JSON.parse(body)).toEqual({ error: expect.any(String) });
      return `${status} ${body}`;
    });
  } finally {
    client.destroy();
  }
}

/** The answers to the two requests `answers` sends after the attack. */
const FOLLOWING = ['200 {"result":"canary"}', '200 {"result":"last"}'];

/**
 * The lane's answers are node:http's, but for the connection kept where node:http closes it: a
 * request refused before its body was read makes node:http close, where the lane, handing it
 * over whole, lets node:http keep the connection (docs/decisions.md, "KV fast lane"). What follows
 * is then the answers to the requests sent after the attack, and nothing else.
 */
function sameAnswers(viaLane: string[], viaNode: string[]): void {
  expect(viaLane.slice(0, viaNode.length)).toEqual(viaNode);
  const more = viaLane.slice(viaNode.length);
  expect(more).toEqual(FOLLOWING.slice(FOLLOWING.length - more.length));
}

describe("the lane frames and refuses requests as node:http does", () => {
  for (const [name, bytes] of ATTACKS) {
    it(name, async () => {
      sameAnswers(await answers(lane(), bytes), await answers(plain(), bytes));
      expect(
        await lane()
          .kvFetch("/get/sec:hidden")
          .then((r) => r.json()),
      ).toEqual({ result: null });
    });
  }
});

describe("the lane authenticates as node:http does", () => {
  for (const [name, lines] of AUTH_ATTACKS) {
    it(name, async () => {
      const bytes = ROOT("TOKEN", lines).replace(BODY, '["DEL","ab"]');
      sameAnswers(await answers(lane(), bytes), await answers(plain(), bytes));
    });
  }
});

describe("the lane's replies", () => {
  it("are held to the reply cap as node:http's are", async () => {
    for (const s of [lane(), plain()]) {
      await s.kvFetch("/", { body: JSON.stringify(["SET", "sec:huge", "h".repeat(MAX_REPLY)]) });
    }
    const bytes = ROOT("TOKEN", ["Authorization: Bearer TOKEN"]).replace(
      BODY,
      '["GET","sec:huge"]',
    );
    const fixed = bytes.replace("Content-Length: 12", "Content-Length: 18");
    const answeredBefore = await laneCount("answered");
    const viaLane = await answers(lane(), fixed);
    expect((await laneCount("answered")) - answeredBefore).toBeGreaterThanOrEqual(1);
    expect(viaLane).toEqual(await answers(plain(), fixed));
    expect(viaLane[0]).toMatch(/^\d{3} \{"error":"ERR reply too large/);
  });
});

describe("the lane and an ACL user's token", () => {
  /** The answers to a read the user may run and a write it may not, with its minted token. */
  async function aclAnswers(s: TestStashd, user: string): Promise<string[]> {
    const standard = (argv: unknown[]): Promise<unknown> =>
      s.kvFetch("/", { body: JSON.stringify(argv) }).then((r) => r.json());
    const rules = ["on", ">pw", "~sec:*", "+get"];
    expect(await standard(["ACL", "SETUSER", user, ...rules])).toEqual({ result: "OK" });
    const minted = (await standard(["ACL", "RESTTOKEN", user, "pw"])) as { result: string };
    expect(minted).toEqual({ result: expect.stringMatching(/^acl_/) as unknown });
    const bytes = [
      ROOT(minted.result, ["Authorization: Bearer TOKEN"]).replace(BODY, '["GET","sec:a"]'),
      ROOT(minted.result, ["Authorization: Bearer TOKEN"]).replace(BODY, '["DEL","ab"]'),
    ].join("");
    return answers(s, bytes.replace("Content-Length: 12", "Content-Length: 15"));
  }

  it("is taken by the lane, and held to the user's rights as on node:http", async () => {
    const answeredBefore = await laneCount("answered");
    const viaLane = await aclAnswers(lane(), "sec:acl-lane");
    expect((await laneCount("answered")) - answeredBefore).toBeGreaterThanOrEqual(4);
    const viaNode = await aclAnswers(plain(), "sec:acl-plain");
    expect(viaLane).toEqual(viaNode);
    expect(viaLane[0]).toBe('200 {"result":null}');
    expect(viaLane[1]).toMatch(/^400 .*NOPERM/);
  });
});

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const bodyOf = (r: Buffer | undefined): string =>
  (r ?? Buffer.alloc(0)).toString().split("\r\n\r\n")[1] ?? "";

describe("connections on the lane, attacked", () => {
  it("answers 1000 requests pipelined in one write, in order", async () => {
    const answeredBefore = await laneCount("answered");
    const client = new RawClient(portOf(lane()));
    try {
      const a = { Authorization: `Bearer ${lane().kv.token}` };
      const all = Array.from({ length: 1000 }, (_, i) => request("/", `["ECHO","${i}"]`, a));
      client.write(Buffer.concat(all));
      const bodies = (await client.responses(1000)).map(bodyOf);
      expect(bodies).toEqual(all.map((_, i) => `{"result":"${i}"}`));
      expect((await laneCount("answered")) - answeredBefore).toBe(1000);
    } finally {
      client.destroy();
    }
  });

  it("serves a request split at every byte boundary", async () => {
    const bytes = request("/", '["ECHO","split"]', { Authorization: `Bearer ${lane().kv.token}` });
    const answeredBefore = await laneCount("answered");
    for (let at = 1; at < bytes.length; at++) {
      const client = new RawClient(portOf(lane()));
      try {
        client.write(bytes.subarray(0, at));
        await pause(1);
        client.write(bytes.subarray(at));
        expect(bodyOf((await client.responses(1))[0])).toBe('{"result":"split"}');
      } finally {
        client.destroy();
      }
    }
    expect((await laneCount("answered")) - answeredBefore).toBe(bytes.length - 1);
  });

  it("hands node:http exactly the bytes after its last answer, a partial request among them", async () => {
    const client = new RawClient(portOf(lane()));
    try {
      const a = { Authorization: `Bearer ${lane().kv.token}` };
      const byNode = request("/?x=1", '["ECHO","node"]', a);
      client.write(Buffer.concat([request("/", '["ECHO","lane"]', a), byNode.subarray(0, 30)]));
      expect(bodyOf((await client.responses(1))[0])).toBe('{"result":"lane"}');
      await pause(20);
      client.write(Buffer.concat([byNode.subarray(30), request("/", '["ECHO","after"]', a)]));
      const bodies = (await client.responses(2)).map(bodyOf);
      expect(bodies).toEqual(['{"result":"node"}', '{"result":"after"}']);
    } finally {
      client.destroy();
    }
  });

  it("hands over a request that looked like the lane's until its Transfer-Encoding came", async () => {
    const client = new RawClient(portOf(lane()));
    try {
      const head = `POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${lane().kv.token}\r\n`;
      client.write(head);
      await pause(20);
      client.write('Transfer-Encoding: chunked\r\n\r\n5\r\n["ECH\r\n8\r\nO","te"]\r\n0\r\n\r\n');
      expect(bodyOf((await client.responses(1))[0])).toBe('{"result":"te"}');
    } finally {
      client.destroy();
    }
  });

  it("keeps requests trickled in behind a blocked command, and answers them in order", async () => {
    const client = new RawClient(portOf(lane()));
    try {
      const a = { Authorization: `Bearer ${lane().kv.token}` };
      client.write(request("/", '["BLPOP","sec:none","0.3"]', a));
      const next = Buffer.concat(
        Array.from({ length: 20 }, (_, i) => request("/", `["ECHO","${i}"]`, a)),
      );
      for (let at = 0; at < next.length; at += 7) {
        client.write(next.subarray(at, at + 7));
        if (at % 140 === 0) await pause(1);
      }
      const bodies = (await client.responses(21)).map(bodyOf);
      expect(bodies).toEqual([
        '{"result":null}',
        ...Array.from({ length: 20 }, (_, i) => `{"result":"${i}"}`),
      ]);
    } finally {
      client.destroy();
    }
  });

  it("gives node:http a request trickled in more than a few pieces", async () => {
    const handedBefore = await laneCount("handed_over");
    const client = new RawClient(portOf(lane()));
    try {
      const value = "t".repeat(30 * 1024);
      const bytes = request("/", `["SET","sec:trickle","${value}"]`, {
        Authorization: `Bearer ${lane().kv.token}`,
      });
      const size = Math.ceil(bytes.length / 40);
      for (let at = 0; at < bytes.length; at += size) {
        client.write(bytes.subarray(at, at + size));
        await pause(2);
      }
      expect(bodyOf((await client.responses(1))[0])).toBe('{"result":"OK"}');
      expect(await laneCount("handed_over")).toBe(handedBefore + 1);
      const stored = await lane()
        .kvFetch("/strlen/sec:trickle")
        .then((r) => r.json());
      expect(stored).toEqual({ result: value.length });
    } finally {
      client.destroy();
    }
  });

  for (const [name, gateway] of [
    ["the lane", () => lane()],
    ["node:http", () => plain()],
  ] as const) {
    it(`cuts off a client sending its request a byte at a time, forever (${name})`, async () => {
      const client = new RawClient(portOf(gateway()));
      const bytes = Buffer.from(`POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ${"s".repeat(10_000)}`);
      let at = 0;
      const drip = setInterval(() => client.write(bytes.subarray(at, ++at)), 20);
      try {
        const [res] = await client.responses(1);
        expect(res?.toString()).toMatch(/^HTTP\/1\.1 408 /);
        expect(JSON.parse(bodyOf(res))).toEqual({ error: expect.any(String) });
        await eventually(() => expect(client.closed).toBe(true));
      } finally {
        clearInterval(drip);
        client.destroy();
      }
    });
  }

  it("closes connections that never send a byte", async () => {
    const clients = Array.from({ length: 20 }, () => new RawClient(portOf(lane())));
    try {
      await eventually(() => expect(clients.filter((c) => !c.closed)).toEqual([]));
    } finally {
      for (const c of clients) c.destroy();
    }
  });

  it("answers no more requests of a client that does not read its answers", async () => {
    const value = "r".repeat(32 * 1024);
    await lane().kvFetch("/", { body: JSON.stringify(["SET", "sec:reply", value]) });
    const client = new RawClient(portOf(lane()));
    try {
      client.reading(false);
      const a = { Authorization: `Bearer ${lane().kv.token}` };
      const count = 1000; // 31 MiB of answers
      const answeredBefore = await laneCount("answered");
      client.write(
        Buffer.concat(Array.from({ length: count }, () => request("/", '["GET","sec:reply"]', a))),
      );
      expect(await settledLaneAnswers(answeredBefore)).toBeLessThan(count / 4);
      client.reading(true);
      const answers = await client.responses(count, 20_000); // 31 MiB on a loaded machine
      expect(answers.every((r) => bodyOf(r) === JSON.stringify({ result: value }))).toBe(true);
    } finally {
      client.destroy();
    }
  });
});
