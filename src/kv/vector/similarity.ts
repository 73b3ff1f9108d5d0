import type { Metric } from "./parse.js";

/**
 * How vectors are compared. Every metric is ranked by a "similarity", higher is closer:
 * COSINE and DOT by the dot product (COSINE's vectors are stored unit-length, so it is the
 * cosine), EUCLIDEAN by the negated squared distance. The reply's score maps it onto 0…1 as
 * Upstash documents for its vector scores (docs/vector.md, "Scores").
 */

/** The vector as the index keeps it: unit length for COSINE (a zero vector stays zero). */
export function prepared(metric: Metric, vector: Float32Array): Float32Array {
  if (metric !== "COSINE") return vector;
  let norm = 0;
  for (const x of vector) norm += x * x;
  if (norm === 0) return vector;
  const scale = 1 / Math.sqrt(norm);
  return vector.map((x) => x * scale);
}

/** Similarity of the query `q` with the stored vector at `data[offset…offset+q.length)`. */
export function similarity(
  metric: Metric,
  q: Float32Array,
  data: Float32Array,
  offset: number,
): number {
  const dim = q.length;
  let sum = 0;
  if (metric === "EUCLIDEAN") {
    for (let i = 0; i < dim; i++) {
      const d = (q[i] as number) - (data[offset + i] as number);
      sum += d * d;
    }
    return -sum;
  }
  for (let i = 0; i < dim; i++) sum += (q[i] as number) * (data[offset + i] as number);
  return sum;
}

/**
 * The reply's score in 0…1, higher is closer: COSINE (1 + cos) / 2, EUCLIDEAN 1 / (1 + d²),
 * DOT (1 + dot) / 2 clamped to 0…1 (a dot product of vectors longer than 1 leaves the range;
 * the ranking is by the dot product itself, so clamped scores may tie).
 */
export function score(metric: Metric, sim: number): number {
  if (metric === "EUCLIDEAN") return 1 / (1 - sim);
  return Math.min(1, Math.max(0, (1 + sim) / 2));
}
