import { BlockList, isIPv4, isIPv6 } from "node:net";

// Which addresses the gateway may connect to when it fetches a URL an upstream gave it (safe-download.ts): only
// public unicast ones, unless the operator allows a private upstream (`media.download.allow_private`). Pure: no
// DNS, no sockets; the downloader asks it about every address it is about to connect to.

export interface NormalAddress {
  address: string;
  family: "ipv4" | "ipv6";
}

const MAPPED = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/**
 * An address as the policy checks it: IPv6 in its canonical text, an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`,
 * `::ffff:7f00:1`) as the IPv4 address it reaches, so that no IPv4 range can be dodged by writing it as IPv6
 * (and no Node version's BlockList handling of mapped addresses matters). Null for anything else (a zone ID, text).
 */
export function normaliseAddress(address: string): NormalAddress | null {
  if (isIPv4(address)) return { address, family: "ipv4" };
  if (!isIPv6(address)) return null;
  let canonical: string;
  try {
    // The WHATWG serialiser compresses zeros, lowercases and writes a dotted tail as hex.
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const mapped = MAPPED.exec(canonical);
  if (!mapped) return { address: canonical, family: "ipv6" };
  const [high, low] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
  return { address: [high >> 8, high & 0xff, low >> 8, low & 0xff].join("."), family: "ipv4" };
}

/** IPv4 ranges that are not public unicast (IANA special-purpose registry, RFC 6890 and successors). */
const IPV4_NON_PUBLIC: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network", the unspecified address
  ["10.0.0.0", 8], // RFC 1918
  ["100.64.0.0", 10], // CGNAT shared space
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12], // RFC 1918
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // TEST-NET-1
  ["192.88.99.0", 24], // 6to4 relay anycast (deprecated)
  ["192.168.0.0", 16], // RFC 1918
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // TEST-NET-2
  ["203.0.113.0", 24], // TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

/**
 * IPv6 is checked the other way round: only global unicast (2000::/3) is public, which leaves out loopback,
 * unspecified, IPv4-compatible and NAT64 forms, unique-local fc00::/7, link-local, multicast; then the parts of
 * 2000::/3 that are not public either.
 */
const IPV6_GLOBAL: readonly [string, number] = ["2000::", 3];
const IPV6_NON_PUBLIC: ReadonlyArray<readonly [string, number]> = [
  ["2001::", 23], // IETF protocol assignments (Teredo, ORCHID, …)
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: embeds any IPv4 address, private ones included
  ["3fff::", 20], // documentation (RFC 9637)
];

function blockList(family: "ipv4" | "ipv6", ranges: ReadonlyArray<readonly [string, number]>): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

const ipv4NonPublic = blockList("ipv4", IPV4_NON_PUBLIC);
const ipv6Global = blockList("ipv6", [IPV6_GLOBAL]);
const ipv6NonPublic = blockList("ipv6", IPV6_NON_PUBLIC);

/** Whether `address` is public unicast; anything that is not an IP address is not. */
export function isPublicAddress(address: string): boolean {
  const normal = normaliseAddress(address);
  if (!normal) return false;
  if (normal.family === "ipv4") return !ipv4NonPublic.check(normal.address, "ipv4");
  return ipv6Global.check(normal.address, "ipv6") && !ipv6NonPublic.check(normal.address, "ipv6");
}

/** A hostname as compared with the allow-list: case and a trailing dot do not matter. */
function normaliseHostname(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, "");
}

export interface AddressPolicy {
  /** Whether the gateway may connect to `address`, which the URL's `hostname` names (or is). */
  permits(hostname: string, address: string): boolean;
}

/**
 * The policy with the operator's exceptions: `allowPrivate` entries (validated by the config schema) are CIDRs,
 * single addresses, or hostnames whose every address is allowed. An IPv4-mapped IPv6 entry of /96 or longer
 * is taken as the IPv4 range it maps, since addresses are compared once normalised.
 */
export function createAddressPolicy(allowPrivate: readonly string[]): AddressPolicy {
  const allowedRanges = new BlockList();
  const allowedHosts = new Set<string>();
  for (const entry of allowPrivate) {
    const [network = "", prefixText] = entry.split("/");
    const normal = normaliseAddress(network);
    if (!normal) {
      allowedHosts.add(normaliseHostname(entry));
      continue;
    }
    const prefix = prefixText === undefined ? (isIPv6(network) ? 128 : 32) : Number(prefixText);
    if (normal.family === "ipv4" && isIPv6(network)) {
      // A mapped network was rewritten as IPv4 above: its prefix counts the 96 bits of the mapping too. A shorter
      // one stays IPv6 (and so allows no IPv4 address): taking it as 0.0.0.0/0 would allow far more than meant.
      if (prefix >= 96) allowedRanges.addSubnet(normal.address, prefix - 96, "ipv4");
      else allowedRanges.addSubnet(network, prefix, "ipv6");
      continue;
    }
    allowedRanges.addSubnet(normal.address, prefix, normal.family);
  }
  return {
    permits(hostname, address) {
      const normal = normaliseAddress(address);
      if (!normal) return false;
      if (isPublicAddress(normal.address)) return true;
      return allowedHosts.has(normaliseHostname(hostname)) || allowedRanges.check(normal.address, normal.family);
    },
  };
}
