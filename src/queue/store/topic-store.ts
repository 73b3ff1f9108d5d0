import { AppError } from "../../shared/errors.js";
import type { Partitions } from "./partitions.js";
import type { QueueRedis } from "./redis.js";
import type { QueueKeys } from "./keys.js";
import { ScriptCode } from "./codes.js";
import { asArray, asText, checked } from "./replies.js";
import { transitions } from "./transitions.js";

export interface Endpoint {
  name?: string | undefined;
  url: string;
}

export interface UrlGroup {
  name: string;
  createdAt: number;
  updatedAt: number;
  endpoints: Endpoint[];
  /** Default publish headers (PATCH /v2/topics/{name}), lower-case names. */
  headers: Record<string, string[]>;
}

/** URL groups ("topics"), one JSON value per group, changed only through the topicUpdate script. */
export class TopicStore {
  private readonly pool: QueueRedis;
  private readonly K: QueueKeys;

  constructor(
    readonly parts: Partitions,
    /** Most endpoints of one group (STASHD_QUEUE_MAX_URL_GROUP_ENDPOINTS). */
    readonly maxEndpoints: number,
  ) {
    // URL groups exist once for the whole queue: they live in partition 0 (Partitions.main), read
    // rarely (at publish to a group), so nothing is gained by spreading them.
    this.pool = parts.main.redis;
    this.K = parts.main.keys;
  }

  async get(name: string): Promise<UrlGroup | undefined> {
    const text = asText(checked(await this.pool.exec(["GET", this.K.topic(name)]), "topic"));
    return text ? normalize(text) : undefined;
  }

  async list(): Promise<UrlGroup[]> {
    const names = asArray(checked(await this.pool.exec(["SMEMBERS", this.K.topics]), "topics"));
    const groups = await Promise.all(names.map((n) => this.get(asText(n) ?? "")));
    return groups
      .filter((g): g is UrlGroup => g !== undefined)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Applies an update; false when the group does not exist (remove, headers). An add that would
   * give the group more than `maxEndpoints` endpoints changes nothing and is a 400.
   */
  async update(op: "add" | "remove" | "headers", name: string, arg: unknown): Promise<boolean> {
    const reply = await transitions.topicUpdate.run(
      this.pool,
      [this.K.topic(name), this.K.topics],
      [op, String(Date.now()), name, JSON.stringify(arg), String(this.maxEndpoints)],
    );
    if (reply === ScriptCode.tooManyEndpoints) throw this.tooMany();
    return reply !== ScriptCode.urlGroupMissing;
  }

  /** The refusal of more endpoints than a group may have. */
  tooMany(): AppError {
    return new AppError(
      "bad_request",
      `a url group may have at most ${this.maxEndpoints} endpoints (STASHD_QUEUE_MAX_URL_GROUP_ENDPOINTS)`,
    );
  }

  async delete(name: string): Promise<boolean> {
    const existed = await transitions.topicDelete.run(
      this.pool,
      [this.K.topic(name), this.K.topics],
      [name],
    );
    return existed === 1;
  }
}

/** Lua's cjson writes empty arrays as `{}`; this restores the shapes. */
function normalize(text: string): UrlGroup {
  const g = JSON.parse(text) as Partial<UrlGroup> & { endpoints?: unknown; headers?: unknown };
  const endpoints = Array.isArray(g.endpoints) ? (g.endpoints as Endpoint[]) : [];
  const headers =
    g.headers && !Array.isArray(g.headers) ? (g.headers as Record<string, string[]>) : {};
  return {
    name: g.name ?? "",
    createdAt: g.createdAt ?? 0,
    updatedAt: g.updatedAt ?? 0,
    endpoints: endpoints.map((e) => (e.name ? { name: e.name, url: e.url } : { url: e.url })),
    headers,
  };
}
