/**
 * Browser ICE candidates are screened before the SFU sees them (DECISIONS 11): the SFU
 * sends STUN checks to whatever a candidate names, so a candidate naming loopback, a
 * private or link-local network, the SFU host's own addresses or its ingest ports would
 * make it probe there for the browser (SSRF, and media injection into its own ingest).
 * Dropped: a candidate whose address is such an IP literal (the net guard's rules,
 * relaxed by `ALLOW_PRIVATE_NETWORK_TARGETS` except for the ingest ports; a public
 * address of this host, from every interface, never passes), or a hostname other than
 * an mDNS `.local` name (browsers hide host addresses behind those; the SFU cannot be
 * made to resolve anything else). ICE still connects without them: the SFU learns the
 * browser's address from the browser's own checks (peer-reflexive candidates).
 */
import { ipv6Groups, isPrivateAddress } from "../net_guard.ts";
import type { IceCandidate, Mountpoint } from "../ports/sfu.ts";

export interface CandidatePolicy {
  /** `ALLOW_PRIVATE_NETWORK_TARGETS`: private addresses pass (tests, local demos). */
  allowPrivate: boolean;
  /** The SFU's ingest address and the session's ingest ports: never passed. */
  ingestHost: string;
  ingestPorts: ReadonlySet<number>;
  /**
   * Addresses of the host itself (every interface of this host, where Janus runs when
   * ingest is on loopback): a public one never passes, whatever the port.
   */
  hostAddresses?: readonly string[];
}

/** Every interface address of this host (none when the process may not list them). */
export function localInterfaceAddresses(): string[] {
  try {
    return Deno.networkInterfaces().map((i) => i.address);
  } catch {
    return [];
  }
}

/**
 * The policy for `mp` with private addresses refused; `hostAddresses` are this host's
 * (`localInterfaceAddresses()` unless a test injects them).
 */
export function strictPolicy(
  mp: Mountpoint,
  hostAddresses: readonly string[] = localInterfaceAddresses(),
): CandidatePolicy {
  return {
    allowPrivate: false,
    ingestHost: mp.host,
    ingestPorts: new Set([mp.videoPort, mp.audioPort]),
    hostAddresses,
  };
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
/** An mDNS name as browsers make them (a UUID, or any label) under `.local`. */
const MDNS = /^[a-z0-9-]{1,63}\.local\.?$/i;

/**
 * One spelling per IP: a v4 literal and its IPv4-mapped or -compatible v6 forms alike
 * (the SFU's dual-stack sockets reach the same host by either), v6 by its groups.
 */
function ipKey(ip: string): string | null {
  const g = ipv6Groups(IPV4.test(ip) ? `::ffff:${ip}` : ip);
  if (!g) return null;
  const embedsV4 = g.slice(0, 5).every((x) => x === 0) &&
    (g[5] === 0xffff || (g[5] === 0 && g[6] !== 0));
  return embedsV4 ? `v4:${g[6]}:${g[7]}` : `v6:${g.join(":")}`;
}

/** Whether `host` names the same IP as `other` (in any spelling). */
function sameIp(host: string, other: string): boolean {
  if (host === other) return true;
  const a = ipKey(host);
  return a !== null && a === ipKey(other);
}

/**
 * Whether one candidate line (`candidate:…`, with or without `a=`) may reach the SFU.
 * The empty candidate (end of candidates) passes; a line that does not parse does not.
 */
export function candidateAllowed(line: string, p: CandidatePolicy): boolean {
  const text = line.trim().replace(/^a=/, "");
  if (text === "") return true;
  // candidate:<foundation> <component> <transport> <priority> <address> <port> typ …
  // (the foundation as long as Janus reads it, so both see the same address)
  const f =
    /^candidate:\S{1,31} \d{1,3} [a-z]{3} \d{1,10} (\S{1,255}) (\d{1,5}) typ [a-z]{1,8}( .*)?$/i
      .exec(text);
  if (!f) return false;
  const address = f[1];
  const port = Number(f[2]);
  if (port < 1 || port > 65535) return false;
  const isV4 = IPV4.test(address);
  const isV6 = !isV4 && address.includes(":") && ipv6Groups(address) !== null;
  if (!isV4 && !isV6) return MDNS.test(address);
  if (sameIp(address, p.ingestHost) && p.ingestPorts.has(port)) return false;
  // A private address of the SFU is judged as private (allowed in tests, where the
  // browser shares loopback with the SFU); a public one is the SFU itself.
  if (isPrivateAddress(address)) return p.allowPrivate;
  return ![p.ingestHost, ...p.hostAddresses ?? []].some((own) =>
    sameIp(address, own)
  );
}

/** Whether the browser's candidate (null: the end of them) may reach the SFU. */
export function screenCandidate(
  c: IceCandidate | null,
  p: CandidatePolicy,
): boolean {
  return c === null || candidateAllowed(c.candidate, p);
}

/**
 * The browser's SDP answer without the candidate lines the policy drops (any line that
 * looks like one, however spaced or cased: only the canonical form may pass).
 */
export function screenAnswerSdp(sdp: string, p: CandidatePolicy): string {
  return sdp.split(/\r?\n/).filter((line) =>
    !/^\s*a\s*=\s*candidate/i.test(line) ||
    (line.startsWith("a=candidate:") && candidateAllowed(line, p))
  ).join("\r\n");
}
