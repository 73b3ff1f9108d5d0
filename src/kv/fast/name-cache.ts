import type { Arg } from "../../shared/redis/resp.js";
import type { CommandTable } from "../commands/policy.js";

/** Most names kept per command table; past it the map is cleared (only odd casings get there). */
const MAX_NAMES = 4096;
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * Facts about a command name that hold whatever the arguments, computed once per name as sent
 * (`GET` and `get` are two entries) and command table, so a pipeline's commands skip the steps
 * that cannot apply to them without lower-casing each name again. Buffer names are keyed by their
 * latin1 text (one string per byte sequence).
 */
export class NameCache<T> {
  private readonly tables = new WeakMap<CommandTable, Map<string, T>>();

  /**
   * `compute` gets the name lower-cased and whether it has non-ASCII characters: steps that decode
   * names as UTF-8 may lower-case such a name to an ASCII one, so it must answer conservatively.
   */
  constructor(
    private readonly compute: (name: string, table: CommandTable, nonAscii: boolean) => T,
  ) {}

  get(first: Arg, table: CommandTable): T {
    const raw = typeof first === "string" ? first : first.toString("latin1");
    let names = this.tables.get(table);
    if (!names) this.tables.set(table, (names = new Map()));
    let value = names.get(raw);
    if (value === undefined) {
      value = this.compute(raw.toLowerCase(), table, NON_ASCII.test(raw));
      if (names.size >= MAX_NAMES) names.clear();
      names.set(raw, value);
    }
    return value;
  }
}
