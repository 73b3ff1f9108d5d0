import type { Arg } from "../../shared/redis/resp.js";

/**
 * The VECTOR.* command grammar (docs/vector.md), as Upstash documents it and `@upstash/redis`
 * 1.39 sends it. Parsing never touches Redis; every malformed command becomes a `VectorSyntax`
 * error whose message is the reply.
 */

export const METRICS = ["COSINE", "EUCLIDEAN", "DOT"] as const;
export type Metric = (typeof METRICS)[number];
export const PROFILES = ["FAST", "BALANCED", "PRECISE"] as const;
export type Profile = (typeof PROFILES)[number];

export class VectorSyntax extends Error {}

export interface CreateRequest {
  readonly dim: number;
  readonly metric: Metric;
  readonly existsOk: boolean;
}

export interface QueryRequest {
  readonly topK: number;
  readonly profile: Profile;
  readonly vector: Float32Array;
}

/** The limits parsing enforces (settings, see VectorSettings). */
export interface ParseLimits {
  readonly maxDimension: number;
  readonly maxTopK: number;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const INTEGER = /^[0-9]+$/;

const upper = (a: Arg | undefined): string => a?.toString().toUpperCase() ?? "";

/** A positive integer argument within [1, max], or a VectorSyntax naming `what`. */
function boundedInt(arg: Arg | undefined, what: string, max: number): number {
  const text = arg?.toString() ?? "";
  const n = INTEGER.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > max) {
    throw new VectorSyntax(`ERR ${what} must be an integer between 1 and ${max}`);
  }
  return n;
}

function oneOf<T extends string>(arg: Arg | undefined, what: string, allowed: readonly T[]): T {
  const word = upper(arg);
  const found = allowed.find((a) => a === word);
  if (found === undefined)
    throw new VectorSyntax(`ERR ${what} must be one of ${allowed.join(", ")}`);
  return found;
}

/** `VECTOR.CREATE <index> DIM <n> METRIC <m> [EXISTSOK]`, options in any order. */
export function parseCreate(rest: readonly Arg[], limits: ParseLimits): CreateRequest {
  let dim: number | undefined;
  let metric: Metric | undefined;
  let existsOk = false;
  for (let i = 0; i < rest.length; i++) {
    const word = upper(rest[i]);
    if (word === "DIM") dim = boundedInt(rest[++i], "DIM", limits.maxDimension);
    else if (word === "METRIC") metric = oneOf(rest[++i], "METRIC", METRICS);
    else if (word === "EXISTSOK") existsOk = true;
    else throw new VectorSyntax(`ERR syntax error near '${rest[i]?.toString() ?? ""}'`);
  }
  if (dim === undefined || metric === undefined) {
    throw new VectorSyntax("ERR VECTOR.CREATE needs DIM <dimension> and METRIC <metric>");
  }
  return { dim, metric, existsOk };
}

/**
 * A vector given as `VALUES <n> <e1> … <en>`, `FP32 <blob>` or `BASE64-FP32 <blob>` at `at`.
 * Returns the vector and the index after it.
 */
export function parseVector(
  args: readonly Arg[],
  at: number,
  maxDimension: number,
): [Float32Array, number] {
  const form = upper(args[at]);
  if (form === "VALUES") {
    const n = boundedInt(args[at + 1], "the VALUES count", maxDimension);
    const elements = args.slice(at + 2, at + 2 + n);
    if (elements.length !== n) {
      throw new VectorSyntax(`ERR VALUES announces ${n} elements but ${elements.length} follow`);
    }
    return [Float32Array.from(elements, finiteNumber), at + 2 + n];
  }
  if (form === "FP32" || form === "BASE64-FP32") {
    const arg = args[at + 1];
    if (arg === undefined) throw new VectorSyntax(`ERR ${form} needs a blob`);
    return [fp32(form === "FP32" ? toBuffer(arg) : fromBase64(arg), maxDimension), at + 2];
  }
  throw new VectorSyntax(
    "ERR a vector is given as VALUES <count> <e…>, FP32 <blob> or BASE64-FP32 <blob>",
  );
}

function finiteNumber(arg: Arg): number {
  const text = arg.toString().trim();
  const n = text === "" ? NaN : Number(text);
  if (!Number.isFinite(n) || !Number.isFinite(Math.fround(n))) {
    throw new VectorSyntax(`ERR vector element '${text.slice(0, 40)}' is not a finite number`);
  }
  return n;
}

const toBuffer = (arg: Arg): Buffer => (typeof arg === "string" ? Buffer.from(arg, "latin1") : arg);

function fromBase64(arg: Arg): Buffer {
  const text = arg.toString();
  if (!BASE64.test(text)) throw new VectorSyntax("ERR BASE64-FP32 blob is not valid base64");
  return Buffer.from(text, "base64");
}

/** Little-endian FP32 bytes as a vector: a non-zero multiple of 4 bytes, finite elements. */
function fp32(bytes: Buffer, maxDimension: number): Float32Array {
  if (bytes.length === 0 || bytes.length % 4 !== 0) {
    throw new VectorSyntax("ERR an FP32 blob's length must be a non-zero multiple of 4");
  }
  if (bytes.length / 4 > maxDimension) {
    throw new VectorSyntax(`ERR vector has more than ${maxDimension} elements`);
  }
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  if (!out.every(Number.isFinite)) throw new VectorSyntax("ERR vector has a non-finite element");
  return out;
}

/** The vector's little-endian FP32 bytes, as stored in the index hash. */
export function toFp32Bytes(vector: Float32Array): Buffer {
  const out = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) out.writeFloatLE(vector[i] as number, i * 4);
  return out;
}

/** `VECTOR.QUERY <index> TOPK <k> <vector> [PROFILE <p>]`, in any order. */
export function parseQuery(rest: readonly Arg[], limits: ParseLimits): QueryRequest {
  let topK: number | undefined;
  let profile: Profile = "BALANCED";
  let vector: Float32Array | undefined;
  for (let i = 0; i < rest.length;) {
    const word = upper(rest[i]);
    if (word === "TOPK") {
      topK = boundedInt(rest[i + 1], "TOPK", limits.maxTopK);
      i += 2;
    } else if (word === "PROFILE") {
      profile = oneOf(rest[i + 1], "PROFILE", PROFILES);
      i += 2;
    } else if (vector === undefined && ["VALUES", "FP32", "BASE64-FP32"].includes(word)) {
      [vector, i] = parseVector(rest, i, limits.maxDimension);
    } else {
      throw new VectorSyntax(`ERR syntax error near '${rest[i]?.toString().slice(0, 40) ?? ""}'`);
    }
  }
  if (topK === undefined || vector === undefined) {
    throw new VectorSyntax("ERR VECTOR.QUERY needs TOPK <count> and a vector");
  }
  return { topK, profile, vector };
}

/** The shortest decimal text that reads back as the same FP32 value (VECTOR.GET's elements). */
export function fp32Text(value: number): string {
  for (let digits = 1; digits < 9; digits++) {
    const text = Number(value.toPrecision(digits)).toString();
    if (Math.fround(Number(text)) === value) return text;
  }
  return value.toString();
}
