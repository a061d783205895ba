import { describe, expect, it } from "vitest";
import { createAddressPolicy, isPublicAddress, normaliseAddress } from "../../src/providers/address-policy.js";

// Which addresses a media download may connect to: public unicast only, IPv4-mapped IPv6 judged as the IPv4
// address it reaches, and the operator's allow-list (CIDRs, addresses, hostnames) for private upstreams.

const refused: Array<[string, string]> = [
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "this network"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback, end of the range"],
  ["10.0.0.1", "RFC 1918 10/8"],
  ["172.16.0.1", "RFC 1918 172.16/12"],
  ["172.31.255.255", "RFC 1918 172.16/12, end"],
  ["192.168.1.1", "RFC 1918 192.168/16"],
  ["169.254.169.254", "link-local, cloud metadata"],
  ["169.254.0.1", "link-local"],
  ["100.64.0.1", "CGNAT"],
  ["100.127.255.255", "CGNAT, end"],
  ["192.0.0.8", "IETF protocol assignments"],
  ["192.0.2.1", "TEST-NET-1"],
  ["198.51.100.1", "TEST-NET-2"],
  ["203.0.113.1", "TEST-NET-3"],
  ["198.18.0.1", "benchmarking"],
  ["192.88.99.1", "6to4 relay"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast (SSDP)"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "broadcast"],
  ["::", "IPv6 unspecified"],
  ["::1", "IPv6 loopback"],
  ["::ffff:127.0.0.1", "IPv4-mapped loopback, dotted"],
  ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
  ["::FFFF:7F00:0001", "IPv4-mapped loopback, uppercase and padded"],
  ["0:0:0:0:0:ffff:a9fe:a9fe", "IPv4-mapped metadata, uncompressed"],
  ["::ffff:10.0.0.1", "IPv4-mapped RFC 1918"],
  ["::127.0.0.1", "IPv4-compatible (deprecated)"],
  ["64:ff9b::a9fe:a9fe", "NAT64 of the metadata address"],
  ["fc00::1", "unique-local fc00::/7"],
  ["fd12:3456::1", "unique-local fd00::/8"],
  ["fe80::1", "link-local"],
  ["fec0::1", "site-local (deprecated)"],
  ["ff02::1", "multicast"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation (RFC 9637)"],
  ["2001::1", "Teredo"],
  ["2002:7f00:1::1", "6to4 of 127.0.0.1"],
  ["100::1", "discard-only"],
  ["fe80::1%eth0", "a zone ID"],
  ["localhost", "not an address"],
  ["", "empty"],
];

const allowed: Array<[string, string]> = [
  ["8.8.8.8", "public IPv4"],
  ["1.1.1.1", "public IPv4"],
  ["100.63.255.255", "just below CGNAT"],
  ["100.128.0.0", "just above CGNAT"],
  ["172.15.255.255", "just below 172.16/12"],
  ["172.32.0.0", "just above 172.16/12"],
  ["169.253.255.255", "just below link-local"],
  ["223.255.255.255", "just below multicast"],
  ["::ffff:8.8.8.8", "IPv4-mapped public"],
  ["2606:4700:4700::1111", "public IPv6"],
  ["2a00:1450:4001:80b::200e", "public IPv6"],
];

describe("isPublicAddress", () => {
  it.each(refused)("refuses %s (%s)", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(allowed)("allows %s (%s)", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe("normaliseAddress", () => {
  it.each([
    ["::ffff:127.0.0.1", { address: "127.0.0.1", family: "ipv4" }],
    ["::ffff:7f00:1", { address: "127.0.0.1", family: "ipv4" }],
    ["::ffff:a9fe:a9fe", { address: "169.254.169.254", family: "ipv4" }],
    ["2001:0DB8:0000::0001", { address: "2001:db8::1", family: "ipv6" }],
    ["10.1.2.3", { address: "10.1.2.3", family: "ipv4" }],
  ])("%s", (input, expected) => {
    expect(normaliseAddress(input)).toEqual(expected);
  });

  it("is null for anything but an address", () => {
    expect(normaliseAddress("example.com")).toBeNull();
    expect(normaliseAddress("1.2.3")).toBeNull();
  });
});

describe("createAddressPolicy", () => {
  it("allows public addresses to any host and nothing private without an allow-list", () => {
    const policy = createAddressPolicy([]);
    expect(policy.permits("cdn.example", "8.8.8.8")).toBe(true);
    expect(policy.permits("cdn.example", "127.0.0.1")).toBe(false);
    expect(policy.permits("127.0.0.1", "127.0.0.1")).toBe(false);
  });

  it("allows the addresses of an IPv4 CIDR, and no neighbour", () => {
    const policy = createAddressPolicy(["10.1.0.0/16"]);
    expect(policy.permits("a", "10.1.0.1")).toBe(true);
    expect(policy.permits("a", "10.1.255.255")).toBe(true);
    expect(policy.permits("a", "::ffff:10.1.2.3")).toBe(true);
    expect(policy.permits("a", "10.2.0.1")).toBe(false);
    expect(policy.permits("a", "169.254.169.254")).toBe(false);
  });

  it("takes a bare address as a single-address range", () => {
    const policy = createAddressPolicy(["127.0.0.1", "fd00::5"]);
    expect(policy.permits("a", "127.0.0.1")).toBe(true);
    expect(policy.permits("a", "::ffff:7f00:1")).toBe(true);
    expect(policy.permits("a", "127.0.0.2")).toBe(false);
    expect(policy.permits("a", "fd00::5")).toBe(true);
    expect(policy.permits("a", "fd00::6")).toBe(false);
  });

  it("allows the addresses of an IPv6 CIDR", () => {
    const policy = createAddressPolicy(["fd00::/8"]);
    expect(policy.permits("a", "fd12::1")).toBe(true);
    expect(policy.permits("a", "fc00::1")).toBe(false);
    expect(policy.permits("a", "::1")).toBe(false);
  });

  it("takes an IPv4-mapped entry as the IPv4 range it maps", () => {
    const policy = createAddressPolicy(["::ffff:127.0.0.0/104"]);
    expect(policy.permits("a", "127.0.0.1")).toBe(true);
    expect(policy.permits("a", "::ffff:127.1.2.3")).toBe(true);
    expect(policy.permits("a", "10.0.0.1")).toBe(false);
  });

  it("allows a hostname's private addresses, matched exactly (case and a trailing dot aside)", () => {
    const policy = createAddressPolicy(["mock.internal"]);
    expect(policy.permits("mock.internal", "10.0.0.5")).toBe(true);
    expect(policy.permits("MOCK.internal.", "127.0.0.1")).toBe(true);
    expect(policy.permits("other.internal", "10.0.0.5")).toBe(false);
    expect(policy.permits("x.mock.internal", "10.0.0.5")).toBe(false);
    // A host allowed by name still connects only to addresses: a zone ID or text is never one.
    expect(policy.permits("mock.internal", "fe80::1%eth0")).toBe(false);
  });
});
