import { AppError } from "../../shared/errors.js";

/**
 * `Upstash-Retry-Delay` expressions (docs/qstash-protocol.md §3.2): numbers, + - * /, parentheses,
 * the variable `retried` and the functions pow exp sqrt abs floor ceil round min max. Compiled once
 * at publish time (so a bad expression is a 400 there) and evaluated after each failed attempt;
 * result in ms.
 */
export type RetryDelayFn = (retried: number) => number;

type Node = (retried: number) => number;

const FUNCS: Record<string, { arity: number; fn: (...a: number[]) => number }> = {
  pow: { arity: 2, fn: (a = 0, b = 0) => Math.pow(a, b) },
  exp: { arity: 1, fn: (a = 0) => Math.exp(a) },
  sqrt: { arity: 1, fn: (a = 0) => Math.sqrt(a) },
  abs: { arity: 1, fn: (a = 0) => Math.abs(a) },
  floor: { arity: 1, fn: (a = 0) => Math.floor(a) },
  ceil: { arity: 1, fn: (a = 0) => Math.ceil(a) },
  round: { arity: 1, fn: (a = 0) => Math.round(a) },
  min: { arity: 2, fn: (a = 0, b = 0) => Math.min(a, b) },
  max: { arity: 2, fn: (a = 0, b = 0) => Math.max(a, b) },
};

/** Longest accepted expression, in characters (the vendor's own examples are under 50). */
export const MAX_RETRY_DELAY_LENGTH = 1000;
/**
 * Deepest accepted nesting of parentheses, function calls and unary minus: the parser and the
 * compiled closures recurse once per level, so an unbounded depth would overflow the stack.
 */
export const MAX_RETRY_DELAY_DEPTH = 32;

/**
 * Compiles an expression, or throws a 400 naming what is wrong (syntax, length past
 * MAX_RETRY_DELAY_LENGTH, nesting past MAX_RETRY_DELAY_DEPTH).
 */
export function compileRetryDelay(expr: string): RetryDelayFn {
  if (expr.length > MAX_RETRY_DELAY_LENGTH) {
    throw new AppError(
      "bad_request",
      `invalid Upstash-Retry-Delay expression: longer than ${MAX_RETRY_DELAY_LENGTH} characters`,
    );
  }
  let depth = 0;
  const nested = <T>(inner: () => T): T => {
    if (++depth > MAX_RETRY_DELAY_DEPTH) {
      throw new AppError(
        "bad_request",
        `invalid Upstash-Retry-Delay expression: nested deeper than ${MAX_RETRY_DELAY_DEPTH} levels`,
      );
    }
    const node = inner();
    depth--;
    return node;
  };
  const tokens = expr.match(/\d+(\.\d+)?|[A-Za-z_]+|[-+*/(),]|\S/g) ?? [];
  let pos = 0;
  const fail = (): never => {
    throw new AppError("bad_request", `invalid Upstash-Retry-Delay expression: ${expr}`);
  };
  const peek = (): string | undefined => tokens[pos];
  const take = (want?: string): string => {
    const t = tokens[pos++];
    if (t === undefined || (want !== undefined && t !== want)) fail();
    return t as string;
  };
  const primary = (): Node => {
    const t = take();
    if (/^\d/.test(t)) {
      const v = Number(t);
      return () => v;
    }
    if (t === "(") {
      const inner = nested(sum);
      take(")");
      return inner;
    }
    if (t === "-") {
      const inner = nested(primary);
      return (r) => -inner(r);
    }
    if (t === "retried") return (r) => r;
    const f = FUNCS[t] ?? fail();
    take("(");
    const args: Node[] = [nested(sum)];
    while (peek() === ",") {
      take(",");
      args.push(nested(sum));
    }
    take(")");
    if (args.length !== f.arity) fail();
    return (r) => f.fn(...args.map((a) => a(r)));
  };
  const product = (): Node => binary(primary, ["*", "/"]);
  const sum = (): Node => binary(product, ["+", "-"]);
  const binary = (next: () => Node, ops: string[]): Node => {
    let left = next();
    while (ops.includes(peek() ?? "")) {
      const op = take();
      const l = left;
      const right = next();
      left =
        op === "+"
          ? (r) => l(r) + right(r)
          : op === "-"
            ? (r) => l(r) - right(r)
            : op === "*"
              ? (r) => l(r) * right(r)
              : (r) => l(r) / right(r);
    }
    return left;
  };
  if (tokens.length === 0) fail();
  const root = sum();
  if (pos !== tokens.length) fail();
  return (retried) => {
    const v = root(retried);
    return Number.isFinite(v) ? Math.max(0, Math.round(v)) : 0;
  };
}
