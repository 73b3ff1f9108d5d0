import { describe, expect, it } from "vitest";
import { bodyOf, command, useGateway } from "./helpers.js";

const { stashd } = useGateway();
const WRONGPASS = expect.stringMatching(/^WRONGPASS invalid or missing auth token/);

describe("tokens", () => {
  it("answers 401 with a JSON error without a token or with a wrong one", async () => {
    const none = await stashd().kvFetch("/", { body: '["PING"]', token: null });
    expect(none.status).toBe(401);
    expect(await bodyOf(none)).toEqual({ error: WRONGPASS });
    const wrong = await command(stashd(), ["PING"], { token: "not-a-token" });
    expect(wrong).toEqual({ status: 401, body: { error: WRONGPASS } });
    const scheme = await stashd().kvFetch("/", {
      body: '["PING"]',
      headers: { authorization: "Basic abc" },
    });
    expect(scheme.status).toBe(401);
  });

  it("prefers the Authorization header over _token", async () => {
    const res = await stashd().kvFetch(`/ping?_token=${stashd().kv.token}`, {
      method: "GET",
      token: "wrong",
    });
    expect(res.status).toBe(401);
  });

  it("lets the read-only token read and Redis refuse its writes", async () => {
    await command(stashd(), ["SET", "tk:k", "v"]);
    const ro = { token: stashd().kv.readonlyToken };
    expect(await command(stashd(), ["GET", "tk:k"], ro)).toEqual({
      status: 200,
      body: { result: "v" },
    });
    expect(await command(stashd(), ["SET", "tk:k", "x"], ro)).toEqual({
      status: 400,
      body: {
        error: "NOPERM this user has no permissions to run the 'set' command or its subcommand",
      },
    });
    for (const heavy of [["KEYS", "*"], ["SCAN", "0"], ["FLUSHALL"], ["EVAL", "return 1", "0"]]) {
      expect((await command(stashd(), heavy, ro)).body).toEqual({
        error: expect.stringMatching(/^NOPERM/),
      });
    }
    expect((await command(stashd(), ["SCAN", "0", "WITHTYPE"], ro)).body).toEqual({
      error: "NOPERM this user has no permissions to run the 'scan' command or its subcommand",
    });
    const pipe = await stashd().kvFetch("/pipeline", {
      token: ro.token,
      body: '[["GET","tk:k"],["DEL","tk:k"]]',
    });
    expect(await bodyOf(pipe)).toEqual([
      { result: "v" },
      { error: expect.stringMatching(/^NOPERM/) },
    ]);
  });

  it("mints ACL RESTTOKEN tokens that run as the ACL user", async () => {
    await command(stashd(), [
      "ACL",
      "SETUSER",
      "reader",
      "on",
      ">secret",
      "~app:*",
      "+get",
      "+set",
    ]);
    const minted = await command(stashd(), ["ACL", "RESTTOKEN", "reader", "secret"]);
    expect(minted.status).toBe(200);
    const token = (minted.body as { result: string }).result;
    expect(await command(stashd(), ["SET", "app:x", "1"], { token })).toEqual({
      status: 200,
      body: { result: "OK" },
    });
    expect((await command(stashd(), ["SET", "other:x", "1"], { token })).body).toEqual({
      error: expect.stringMatching(/^NOPERM/),
    });
    expect((await command(stashd(), ["DEL", "app:x"], { token })).body).toEqual({
      error: expect.stringMatching(/^NOPERM/),
    });
  });

  it("answers a wrong ACL RESTTOKEN password with the documented text", async () => {
    expect(await command(stashd(), ["ACL", "RESTTOKEN", "reader", "nope"])).toEqual({
      status: 400,
      body: { error: 'ERR Wrong password or user "reader" does not exist' },
    });
    expect(await command(stashd(), ["ACL", "RESTTOKEN", "ghost", "x"])).toEqual({
      status: 400,
      body: { error: 'ERR Wrong password or user "ghost" does not exist' },
    });
  });

  it("refuses changes to the users stashd logs in as", async () => {
    const res = await command(stashd(), ["ACL", "SETUSER", "default_ro", "+@all"]);
    expect(res).toEqual({ status: 400, body: { error: expect.stringContaining("reserved") } });
  });
});
