import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../errors.js";
import { readBody } from "./body.js";

/**
 * readBody against a real node:http server, fed raw bytes over a socket so every shape of body
 * arrives as written: with the headers or after them, declared or chunked, over the limit, or
 * cut off by the client. The server answers what readBody gave: the body's bytes, or the error.
 */
const LIMIT = 64;
let server: http.Server;
let port = 0;
let outcomes: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    readBody(req, LIMIT, () => new AppError("request_too_large", "too large")).then(
      (body) => {
        outcomes.push(`body ${body.toString("latin1")}`);
        res.end(`body ${body.length} ${body.toString("latin1")}`);
      },
      (err: AppError) => {
        outcomes.push(`${err.code}: ${err.message}`);
        res.end(`${err.code}: ${err.message}`);
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/**
 * Sends `parts` over one connection (a pause between them) and returns the first response's
 * body (node:http may answer a request the client left unfinished with a second, 400, one).
 */
async function exchange(parts: string[], pauseMs = 30): Promise<string> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  let received = "";
  socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
  const ended = new Promise((resolve) => socket.once("close", resolve));
  for (const [i, part] of parts.entries()) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    socket.write(part);
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.end();
  await ended;
  const length = Number(/content-length: (\d+)/i.exec(received)?.[1] ?? 0);
  const start = received.indexOf("\r\n\r\n") + 4;
  return received.slice(start, start + length);
}

const head = (headers: string): string => `POST / HTTP/1.1\r\nhost: x\r\n${headers}\r\n`;

describe("readBody", () => {
  it("reads a body that arrives with its headers", async () => {
    expect(await exchange([`${head("content-length: 11\r\n")}["GET","k"]`])).toBe(
      'body 11 ["GET","k"]',
    );
  });

  it("reads a body that arrives after its headers, in pieces", async () => {
    expect(await exchange([head("content-length: 11\r\n"), '["GET"', ',"k"]'])).toBe(
      'body 11 ["GET","k"]',
    );
    expect(await exchange([`${head("content-length: 11\r\n")}["GET"`, ',"k"]'])).toBe(
      'body 11 ["GET","k"]',
    );
  });

  it("reads an empty body, declared or not", async () => {
    expect(await exchange([head("content-length: 0\r\n")])).toBe("body 0 ");
    expect(await exchange([head("")])).toBe("body 0 ");
  });

  it("reads a chunked body, whole or in pieces", async () => {
    const chunked = head("transfer-encoding: chunked\r\n");
    expect(await exchange([`${chunked}3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n`])).toBe("body 5 abcde");
    expect(await exchange([`${chunked}3\r\nabc\r\n`, "2\r\nde\r\n", "0\r\n\r\n"])).toBe(
      "body 5 abcde",
    );
  });

  it("refuses a declared length over the limit before reading", async () => {
    expect(await exchange([head(`content-length: ${LIMIT + 1}\r\n`)])).toBe(
      "request_too_large: too large",
    );
  });

  it("refuses a chunked body over the limit, whole or in pieces", async () => {
    const chunked = head("transfer-encoding: chunked\r\n");
    const over = `${(LIMIT + 1).toString(16)}\r\n${"z".repeat(LIMIT + 1)}\r\n0\r\n\r\n`;
    expect(await exchange([`${chunked}${over}`])).toBe("request_too_large: too large");
    const half = `20\r\n${"z".repeat(32)}\r\n`;
    expect(await exchange([chunked, half, half, half, "0\r\n\r\n"])).toBe(
      "request_too_large: too large",
    );
  });

  it("takes a body of exactly the limit", async () => {
    const body = "y".repeat(LIMIT);
    expect(await exchange([`${head(`content-length: ${LIMIT}\r\n`)}${body}`])).toBe(
      `body ${LIMIT} ${body}`,
    );
  });

  it("keeps the connection for the next requests, each answered as soon as its body is read", async () => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
    await new Promise((resolve) => socket.once("connect", resolve));
    const one = (body: string): string => `${head(`content-length: ${body.length}\r\n`)}${body}`;
    socket.write(one('["GET","a"]'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write(one('["GET","b"]') + one('["GET","c"]'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
    const bodies = received.split("HTTP/1.1 ").slice(1);
    expect(bodies.map((r) => r.slice(r.indexOf("\r\n\r\n") + 4))).toEqual([
      'body 11 ["GET","a"]',
      'body 11 ["GET","b"]',
      'body 11 ["GET","c"]',
    ]);
    expect(received).not.toMatch(/connection: close/i);
  });

  it("gives up on a client that closes mid-body", async () => {
    outcomes = [];
    await exchange([`${head("content-length: 20\r\n")}["GET"`]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(outcomes).toEqual([
      expect.stringMatching(/^bad_request: request body could not be read: /),
    ]);
  });
});
