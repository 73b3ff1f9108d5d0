import { compatBackend } from "../compat/context.js";

// The single-Redis suite of the same name, run unchanged on a Redis Cluster.
compatBackend.cluster = true;
compatBackend.hashTag = true;
await import("../compat/redis-array.test.js");
