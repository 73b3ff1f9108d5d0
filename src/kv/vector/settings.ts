import type { Config } from "../../config/schema.js";

/** The VECTOR.* limits of a database (STASHD_KV_VECTOR_*, see src/config/schema.ts). */
export interface VectorSettings {
  readonly maxDimension: number;
  readonly maxIndexBytes: number;
  readonly cacheBytes: number;
  readonly queryTimeoutMs: number;
  readonly maxTopK: number;
  readonly hnswMinVectors: number;
}

export function vectorSettingsOf(config: Config): VectorSettings {
  return {
    maxDimension: config.kvVectorMaxDimension,
    maxIndexBytes: config.kvVectorMaxIndexBytes,
    cacheBytes: config.kvVectorCacheBytes,
    queryTimeoutMs: config.kvVectorQueryTimeoutMs,
    maxTopK: config.kvVectorMaxTopK,
    hnswMinVectors: config.kvVectorHnswMinVectors,
  };
}
