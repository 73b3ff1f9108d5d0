import { AppError } from "../errors.js";

/**
 * One percent-encoded path segment as text. A malformed escape (`%E0%A4%A`, `%zz`, a lone `%`)
 * is the client's mistake: a 400 naming the segment, never a URIError turned into a 500.
 */
export function decodePathSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new AppError(
      "bad_request",
      `malformed percent-escape in path segment ${JSON.stringify(raw)}`,
    );
  }
}
