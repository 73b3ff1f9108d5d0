import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";
import type { Config } from "../../config/schema.js";
import { AppError } from "../../shared/errors.js";

/**
 * The opt-in destination allow/deny list (STASHD_QUEUE_DESTINATION_ALLOW / _DENY and
 * STASHD_QUEUE_DENY_PRIVATE_NETWORKS). Entries are comma-separated host names (`api.example.com`),
 * wildcard subdomains (`*.example.com`), IP addresses or CIDRs (`10.0.0.0/8`, `fd00::/8`).
 *
 * Contract: with nothing configured every destination is allowed (tests deliver to 127.0.0.1).
 * A deny entry or a private range always wins, also after DNS resolution (a name pointing at a
 * private address is refused at delivery). With an allow list, a destination must match one of
 * its names, or its address must lie in one of its CIDRs.
 */
export interface DestinationPolicy {
  readonly active: boolean;
  /** Checks a URL's host without DNS; throws a 400 AppError naming the rule that refused it. */
  checkUrl(url: string, what: string): void;
  /** The reason an address a name resolved to is refused, or undefined when allowed. */
  refuseAddress(host: string, address: string): string | undefined;
}

/** Loopback, private, link-local, CGNAT, multicast and reserved ranges (v4 and v6). */
const PRIVATE_RANGES: readonly string[] = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "224.0.0.0/3",
  "::/127",
  "fc00::/7",
  "fe80::/10",
  "ff00::/8",
];

interface Rules {
  names: string[];
  nets: BlockList;
  hasNets: boolean;
}

const cache = new WeakMap<Config, DestinationPolicy>();

/** The policy of a configuration, built (and validated) once per Config object. */
export function destinationPolicy(config: Config): DestinationPolicy {
  let policy = cache.get(config);
  if (!policy) {
    policy = buildPolicy(config);
    cache.set(config, policy);
  }
  return policy;
}

/** The port the queue of a configuration listens on, once it does (see noteQueueListener). */
const queuePorts = new WeakMap<Config, number>();

/** Records the queue's listening port, so destinations naming the queue itself are refused. */
export function noteQueueListener(config: Config, port: number): void {
  queuePorts.set(config, port);
}

/**
 * Publish-time check of every URL a request names (destinations, group endpoints, callbacks):
 * a 400 `{"error"}` naming the refused one. No DNS here; resolved addresses are checked at
 * delivery. Always refused, policy or not: a URL on this stashd's own queue listener (a loopback,
 * unspecified or local interface address, or the configured host, with the queue's port), which
 * would make a publish publish again (a URL group containing itself). Names that only resolve
 * to it are caught by the hop limit instead (STASHD_QUEUE_MAX_HOPS).
 */
export function checkDestinations(config: Config, urls: readonly (string | undefined)[]): void {
  const policy = destinationPolicy(config);
  const port = queuePorts.get(config);
  for (const url of urls) {
    if (url === undefined || url === "") continue;
    if (port !== undefined && isOwnListener(url, port, config.host)) {
      throw new AppError(
        "bad_request",
        `destination not allowed: ${url} is this stashd's own queue listener (a publish to itself would loop)`,
      );
    }
    policy.checkUrl(url, "destination");
  }
}

/** Whether `url` names a local address with the queue's port. */
function isOwnListener(url: string, port: number, configuredHost: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  const urlPort = Number(u.port || (u.protocol === "https:" ? 443 : 80));
  if (urlPort !== port) return false;
  const host = hostOf(url).replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host === configuredHost.toLowerCase()) return true;
  const ip = unmapped(host);
  if (isIP(ip) === 0) return false;
  return LOCAL_NETS.check(ip, family(ip)) || localAddresses().has(ip);
}

/** Loopback and unspecified addresses (a connection to 0.0.0.0 or :: reaches this host). */
const LOCAL_NETS = (() => {
  const nets = new BlockList();
  nets.addSubnet("127.0.0.0", 8, "ipv4");
  nets.addAddress("0.0.0.0", "ipv4");
  nets.addAddress("::1", "ipv6");
  nets.addAddress("::", "ipv6");
  return nets;
})();

/** The addresses of this host's interfaces (read on each check: interfaces come and go). */
function localAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) out.add(a.address.toLowerCase().replace(/%.*$/, ""));
  }
  return out;
}

function buildPolicy(config: Config): DestinationPolicy {
  const allow = parseRules(config.queueDestinationAllow, "STASHD_QUEUE_DESTINATION_ALLOW");
  const deny = parseRules(config.queueDestinationDeny, "STASHD_QUEUE_DESTINATION_DENY");
  const denyPrivate = config.queueDenyPrivateNetworks;
  if (denyPrivate) for (const range of PRIVATE_RANGES) addNet(deny, range, "private range");
  const active = allow.names.length > 0 || allow.hasNets || deny.names.length > 0 || deny.hasNets;
  const refuseHost = (host: string): string | undefined => {
    if (matchesName(deny.names, host)) return `${host} is on the deny list`;
    if (isIP(host) !== 0) return refuseIp(allow, deny, unmapped(host), false);
    if (denyPrivate && (host === "localhost" || host.endsWith(".localhost")))
      return `${host} is a private network address`;
    if (allow.names.length === 0 && !allow.hasNets) return undefined;
    if (matchesName(allow.names, host) || allow.hasNets) return undefined;
    return `${host} is not on the allow list`;
  };
  return {
    active,
    checkUrl(url, what) {
      if (!active) return;
      const why = refuseHost(hostOf(url));
      if (why) throw new AppError("bad_request", `${what} not allowed: ${why}`);
    },
    refuseAddress(host, address) {
      if (!active) return undefined;
      const byName = matchesName(allow.names, host);
      return refuseIp(allow, deny, unmapped(address), byName);
    },
  };
}

/** Deny CIDRs always apply; the allow CIDRs only when the name was not allowed already. */
function refuseIp(allow: Rules, deny: Rules, ip: string, allowedByName: boolean) {
  if (deny.nets.check(ip, family(ip))) return `${ip} is in a denied network`;
  if (allowedByName || (allow.names.length === 0 && !allow.hasNets)) return undefined;
  if (allow.hasNets && allow.nets.check(ip, family(ip))) return undefined;
  return `${ip} is not on the allow list`;
}

function parseRules(raw: string | undefined, variable: string): Rules {
  const rules: Rules = { names: [], nets: new BlockList(), hasNets: false };
  for (const entry of (raw ?? "").split(",").map((e) => e.trim().toLowerCase())) {
    if (entry === "") continue;
    if (entry.includes("/") || isIP(entry) !== 0) addNet(rules, entry, variable);
    else if (/^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/.test(entry)) rules.names.push(entry);
    else throw new AppError("invalid_config", `${variable}: not a host name or CIDR: ${entry}`);
  }
  return rules;
}

function addNet(rules: Rules, entry: string, variable: string): void {
  const [ip = "", bits] = entry.split("/");
  const fam = isIP(ip);
  const max = fam === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (fam === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > max) {
    throw new AppError("invalid_config", `${variable}: not a host name or CIDR: ${entry}`);
  }
  rules.nets.addSubnet(ip, prefix, family(ip));
  rules.hasNets = true;
}

function matchesName(names: readonly string[], host: string): boolean {
  const h = host.replace(/\.$/, "");
  return names.some((n) => {
    const name = n.replace(/\.$/, "");
    return name.startsWith("*.") ? h.endsWith(name.slice(1)) : h === name;
  });
}

/** The URL's host, lower case, IPv6 brackets removed. */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  } catch {
    return "";
  }
}

/** `::ffff:10.0.0.1` (or `::ffff:a00:1`, as URL parsing writes it) is checked as IPv4. */
function unmapped(ip: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (dotted?.[1]) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!hex) return ip;
  const [hi, lo] = [parseInt(hex[1] ?? "0", 16), parseInt(hex[2] ?? "0", 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

function family(ip: string): "ipv4" | "ipv6" {
  return isIP(ip) === 6 ? "ipv6" : "ipv4";
}
