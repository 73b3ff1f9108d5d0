import { base58 } from "../domain/ids.js";

/**
 * Generated schedule ids look like the real ones, `scd_` + 28 base58 characters
 * (docs/qstash-protocol.md §7.1).
 */
export const newScheduleId = (): string => `scd_${base58(28)}`;
