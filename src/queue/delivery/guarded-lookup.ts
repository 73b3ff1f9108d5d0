import dns from "node:dns";
import type { LookupFunction } from "node:net";
import type { DestinationPolicy } from "./destination-policy.js";

/**
 * A `lookup` for outbound sockets that resolves the name as usual and then refuses the connection
 * when any resolved address is refused by the destination policy. Checking every address (not
 * just the one used) keeps a name with one public and one private record from slipping through;
 * checking at connect time defeats names that resolve differently at publish and at delivery.
 */
export function guardedLookup(policy: DestinationPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, "");
        return;
      }
      for (const a of addresses) {
        const why = policy.refuseAddress(hostname.toLowerCase(), a.address);
        if (why) {
          callback(
            Object.assign(new Error(`destination not allowed: ${why}`), { code: "EACCES" }),
            "",
          );
          return;
        }
      }
      const first = addresses[0];
      if (options.all) callback(null, addresses);
      else if (first) callback(null, first.address, first.family);
      else
        callback(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), "");
    });
  };
}
