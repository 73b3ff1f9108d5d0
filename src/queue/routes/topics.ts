import { AppError } from "../../shared/errors.js";
import { checkDestinations } from "../delivery/destination-policy.js";
import { checkUrl } from "../domain/publish-options.js";
import type { Endpoint, UrlGroup } from "../store/topic-store.js";
import type { Handler } from "./context.js";
import { decode, notFound, readJsonObject, reply, replyArray } from "./util.js";

const NAME = /^[A-Za-z0-9_.-]+$/;

function groupName(segment: string | undefined): string {
  const name = decode(segment ?? "");
  if (!NAME.test(name)) {
    throw new AppError("bad_request", "invalid url group name: use letters, digits, -, _ or .");
  }
  return name;
}

/** API shape (docs/qstash-protocol.md §2.7): endpoints contain only `name` (when set) and `url`. */
function render(g: UrlGroup): Record<string, unknown> {
  return { name: g.name, createdAt: g.createdAt, updatedAt: g.updatedAt, endpoints: g.endpoints };
}

function parseEndpoints(body: Record<string, unknown> | undefined, needUrl: boolean): Endpoint[] {
  const list = body?.["endpoints"];
  if (!Array.isArray(list) || list.length === 0) {
    throw new AppError("bad_request", 'body must be {"endpoints": [{"name"?, "url"}, ...]}');
  }
  return list.map((item: unknown) => {
    const e = (item ?? {}) as Record<string, unknown>;
    const name = typeof e["name"] === "string" && e["name"] !== "" ? e["name"] : undefined;
    const url = typeof e["url"] === "string" && e["url"] !== "" ? e["url"] : undefined;
    if (needUrl && !url) throw new AppError("bad_request", "every endpoint needs a url");
    if (!name && !url) throw new AppError("bad_request", "every endpoint needs a name or url");
    if (url) checkUrl(url, "endpoint");
    return name ? { name, url: url ?? "" } : { url: url ?? "" };
  });
}

export const addEndpoints: Handler = async (ctx, r) => {
  const name = groupName(r.segments[1]);
  const endpoints = parseEndpoints(await readJsonObject(ctx, r), true);
  if (endpoints.length > ctx.topics.maxEndpoints) throw ctx.topics.tooMany();
  checkDestinations(
    ctx.config,
    endpoints.map((e) => e.url),
  );
  await ctx.topics.update("add", name, endpoints);
  reply(r.res, 200);
};

export const removeEndpoints: Handler = async (ctx, r) => {
  const name = groupName(r.segments[1]);
  const endpoints = parseEndpoints(await readJsonObject(ctx, r), false);
  if (!(await ctx.topics.update("remove", name, endpoints))) throw notFound("url group");
  reply(r.res, 200);
};

export const listTopics: Handler = async (ctx, r) => {
  await replyArray(r.res, 200, (await ctx.topics.list()).map(render));
};

export const getTopic: Handler = async (ctx, r) => {
  const g = await ctx.topics.get(groupName(r.segments[1]));
  if (!g) throw notFound("url group");
  reply(r.res, 200, render(g));
};

/** Idempotent like the service: a missing group answers 200 too (qstash-py's suite deletes first). */
export const deleteTopic: Handler = async (ctx, r) => {
  await ctx.topics.delete(groupName(r.segments[1]));
  reply(r.res, 200);
};

/** PATCH /v2/topics/{name} `{"headers": {Name: "v" | ["v"]}}`: default publish headers. */
export const patchTopic: Handler = async (ctx, r) => {
  const name = groupName(r.segments[1]);
  const raw = (await readJsonObject(ctx, r))?.["headers"];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new AppError("bad_request", 'body must be {"headers": {"Name": "value"}}');
  }
  const headers: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    headers[k.toLowerCase()] = (Array.isArray(v) ? v : [v]).map(String);
  }
  if (!(await ctx.topics.update("headers", name, headers))) throw notFound("url group");
  const g = await ctx.topics.get(name);
  reply(r.res, 200, g ? { ...render(g), headers: g.headers } : undefined);
};
