/**
 * Outbound-target checks against SSRF: engine URLs and webhook targets must not reach
 * loopback, private, link-local, CGNAT or metadata addresses unless the deployment sets
 * `ALLOW_PRIVATE_NETWORK_TARGETS` (tests and local demos). Names are resolved and every
 * resolved address is checked at connect/send time.
 */

export class TargetRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TargetRefusedError";
  }
}

function ipv4ToInt(ip: string): number | null {
  const parts = ip.split(".");
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    // No leading zeros: libc's parsers (getaddrinfo, inet_aton; the SFU's ICE stack
    // among them) read "012" as octal 10, so "012.0.0.1" is 10.0.0.1 there.
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return null;
    const v = Number(p);
    if (v > 255) return null;
    n = n * 256 + v;
  }
  return n;
}

const V4_BLOCKS: [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

function isPrivateV4(ip: string): boolean {
  const n = ipv4ToInt(ip);
  if (n === null) return true;
  return V4_BLOCKS.some(([base, bits]) => {
    const b = ipv4ToInt(base)!;
    const size = 2 ** (32 - bits);
    return n >= b && n < b + size;
  });
}

/**
 * The eight 16-bit groups of an IPv6 literal (brackets, zone and a dotted IPv4 tail
 * allowed), or null when it is not one.
 */
export function ipv6Groups(ip: string): number[] | null {
  let addr = ip.toLowerCase().replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  let tail: number[] = [];
  const v4 = addr.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const n = ipv4ToInt(v4[1]);
    if (n === null) return null;
    tail = [Math.floor(n / 65536), n % 65536];
    addr = addr.slice(0, -v4[1].length) + "0:0";
  }
  const [head, rest] = addr.split("::");
  if (addr.split("::").length > 2) return null;
  const parse = (s: string) =>
    s
      ? s.split(":").map((h) =>
        /^[0-9a-f]{1,4}$/.test(h) ? parseInt(h, 16) : NaN
      )
      : [];
  const h = parse(head);
  const r = rest !== undefined ? parse(rest) : [];
  if ([...h, ...r].some((x) => Number.isNaN(x))) return null;
  const fill = rest !== undefined ? 8 - h.length - r.length : 0;
  const groups = [...h, ...Array(Math.max(0, fill)).fill(0), ...r];
  if (groups.length !== 8) return null;
  if (tail.length) groups.splice(6, 2, ...tail);
  return groups;
}

/** The IPv4 address in the last 32 bits of `g`. */
function embeddedV4(g: number[]): string {
  return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
}

function isPrivateV6(ip: string): boolean {
  const g = ipv6Groups(ip);
  if (!g) return true;
  if (g.every((x) => x === 0)) return true; // ::
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return true; // ::1
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible: judge the embedded IPv4.
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    return isPrivateV4(embeddedV4(g));
  }
  // SIIT ::ffff:0:0/96 (RFC 7915) translates to the embedded IPv4 address.
  if (g.slice(0, 4).every((x) => x === 0) && g[4] === 0xffff && g[5] === 0) {
    return true;
  }
  if (g[0] === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return true; // 100::/64 discard
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo 2001::/32 tunnels to IPv4
  if ((g[0] & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((g[0] & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if (g[0] === 0x2002) return true; // 6to4 embeds an IPv4 address
  if ((g[0] & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true; // documentation
  // NAT64, well-known 64:ff9b::/96 and local-use 64:ff9b:1::/48 (RFC 8215): the
  // translator reaches whatever IPv4 address is embedded, private ones included.
  if (g[0] === 0x0064 && g[1] === 0xff9b) return true;
  return false;
}

/** True when `ip` (v4 or v6 literal) is loopback, private, link-local or otherwise internal. */
export function isPrivateAddress(ip: string): boolean {
  return ip.includes(":") ? isPrivateV6(ip) : isPrivateV4(ip);
}

export type Resolver = (host: string) => Promise<string[]>;

/** Resolves A and AAAA records with Deno's resolver. */
export const systemResolver: Resolver = async (host) => {
  const results = await Promise.allSettled([
    Deno.resolveDns(host, "A"),
    Deno.resolveDns(host, "AAAA"),
  ]);
  const out: string[] = [];
  for (const r of results) if (r.status === "fulfilled") out.push(...r.value);
  return out;
};

/** Localhost names resolve without DNS; everything else goes to `resolver`. */
async function resolveHost(
  host: string,
  resolver: Resolver,
): Promise<string[]> {
  const bare = host.replace(/^\[|\]$/g, "");
  if (ipv4ToInt(bare) !== null || bare.includes(":")) return [bare];
  if (bare === "localhost" || bare.endsWith(".localhost")) {
    return ["127.0.0.1", "::1"];
  }
  return await resolver(bare);
}

/** How long a target's name may take to resolve. */
export const RESOLVE_TIMEOUT_MS = 3000;

export interface GuardOptions {
  allowPrivate: boolean;
  /** Allowed URL schemes, e.g. `["wss:"]` or `["https:"]`. */
  schemes: string[];
  resolver?: Resolver;
  /** Bound on the name resolution (default `RESOLVE_TIMEOUT_MS`). */
  timeoutMs?: number;
}

/**
 * Checks `target` before a connection: scheme allowed, no credentials in the URL, and
 * every address the host resolves to is public (unless private targets are allowed).
 * Throws `TargetRefusedError` with a message that names no address.
 */
export async function assertPublicTarget(
  target: string | URL,
  options: GuardOptions,
): Promise<URL> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new TargetRefusedError("target is not a valid URL");
  }
  if (!options.schemes.includes(url.protocol)) {
    throw new TargetRefusedError(
      `target scheme must be ${options.schemes.join(" or ")}`,
    );
  }
  if (url.username || url.password) {
    throw new TargetRefusedError("target URL must not carry credentials");
  }
  if (options.allowPrivate) return url;
  let addresses: string[];
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    // A slow (or hostile) name server must not hold the caller past its own deadline.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error("resolution timed out")),
        options.timeoutMs ?? RESOLVE_TIMEOUT_MS,
      );
    });
    addresses = await Promise.race([
      resolveHost(url.hostname, options.resolver ?? systemResolver),
      timeout,
    ]);
  } catch {
    throw new TargetRefusedError("target host could not be resolved");
  } finally {
    clearTimeout(timer);
  }
  if (addresses.length === 0) {
    throw new TargetRefusedError("target host could not be resolved");
  }
  if (addresses.some(isPrivateAddress)) {
    throw new TargetRefusedError(
      "target resolves to a private or loopback address",
    );
  }
  return url;
}
