/**
 * Closed-loop HTTP/1.1 load generator that records the latency of every request, for
 * `bench/api.ts` (run as a process of its own). Each of `--connections` keep-alive
 * connections sends a GET, reads the whole response, and sends the next; a request's
 * latency runs from just before its write to the last byte of its response.
 *
 * Why not wrk's latency figures: on this machine wrk's percentiles and average are not
 * per-request latencies once the server stalls now and then. Measured against a test
 * server that holds every request for 200 ms every 3 s, wrk at 32 connections reported
 * 18,791 req/s with an average latency of 7.9 ms, while Little's law bounds the average
 * of a closed loop at 32 / 18,791 s = 1.7 ms; this generator, run beside it on the same
 * server, saw 96 slow requests (3 stalls × 32 connections) and a p99 of 7.5 ms, where
 * wrk claimed 171 ms. wrk's request rate agrees with this generator's, so `bench/api.ts`
 * still takes throughput from wrk (which can drive the bare handler far harder than a
 * JavaScript client) and latency from here. The output carries the Little's-law check.
 *
 * Usage: `deno run --allow-net bench/_loadgen.ts --host 127.0.0.1 --port 8000
 *   --path /a [--path /b …] [--header "Authorization: Bearer …"] [--connections 64]
 *   [--duration 8]`. Prints one `RESULT {…}` line.
 */

interface Options {
  host: string;
  port: number;
  paths: string[];
  headers: string[];
  connections: number;
  durationS: number;
}

function parseArgs(args: string[]): Options {
  const o: Options = {
    host: "127.0.0.1",
    port: 8000,
    paths: [],
    headers: [],
    connections: 64,
    durationS: 8,
  };
  for (let i = 0; i < args.length; i += 2) {
    const v = args[i + 1];
    switch (args[i]) {
      case "--host":
        o.host = v;
        break;
      case "--port":
        o.port = Number(v);
        break;
      case "--path":
        o.paths.push(v);
        break;
      case "--header":
        o.headers.push(v);
        break;
      case "--connections":
        o.connections = Number(v);
        break;
      case "--duration":
        o.durationS = Number(v);
        break;
      default:
        throw new Error(`unknown option ${args[i]}`);
    }
  }
  if (o.paths.length === 0) throw new Error("--path is required");
  return o;
}

const CRLFCRLF = [13, 10, 13, 10];

/** Index just past the blank line ending the head in `buf[0..len)`, or -1. */
function headEnd(buf: Uint8Array, len: number): number {
  outer: for (let i = 0; i + 4 <= len; i++) {
    for (let j = 0; j < 4; j++) {
      if (buf[i + j] !== CRLFCRLF[j]) continue outer;
    }
    return i + 4;
  }
  return -1;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  mean_ms: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
  /** Little's law: connections / rps, the longest the mean latency can be. */
  mean_bound_ms: number;
  statuses: Record<string, number>;
}

async function run(o: Options): Promise<LoadResult> {
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const requests = o.paths.map((p) =>
    enc.encode(
      `GET ${p} HTTP/1.1\r\nHost: ${o.host}:${o.port}\r\n${
        o.headers.map((h) => h + "\r\n").join("")
      }\r\n`,
    )
  );
  let latencies = new Float64Array(1 << 20);
  let n = 0;
  const statuses: Record<string, number> = {};
  const start = performance.now();
  const end = start + o.durationS * 1000;

  const connection = async (index: number): Promise<void> => {
    const conn = await Deno.connect({ hostname: o.host, port: o.port });
    conn.setNoDelay(true);
    let buf = new Uint8Array(16 * 1024);
    let next = index % requests.length;
    try {
      while (performance.now() < end) {
        const t0 = performance.now();
        const req = requests[next];
        next = (next + 1) % requests.length;
        for (let off = 0; off < req.length;) {
          off += await conn.write(req.subarray(off));
        }
        let len = 0;
        let total = -1;
        while (total < 0 || len < total) {
          if (len === buf.length) {
            const bigger = new Uint8Array(buf.length * 2);
            bigger.set(buf);
            buf = bigger;
          }
          const got = await conn.read(buf.subarray(len));
          if (got === null) throw new Error("connection closed by the server");
          len += got;
          if (total < 0) {
            const h = headEnd(buf, len);
            if (h < 0) continue;
            const head = dec.decode(buf.subarray(0, h));
            const m = head.match(/\r\ncontent-length:\s*(\d+)/i);
            if (!m) throw new Error("response without content-length");
            total = h + Number(m[1]);
            const status = head.slice(9, 12);
            statuses[status] = (statuses[status] ?? 0) + 1;
          }
        }
        if (len !== total) throw new Error("more bytes than one response");
        if (n === latencies.length) {
          const bigger = new Float64Array(latencies.length * 2);
          bigger.set(latencies);
          latencies = bigger;
        }
        latencies[n++] = performance.now() - t0;
      }
    } finally {
      conn.close();
    }
  };
  await Promise.all(
    Array.from({ length: o.connections }, (_, i) => connection(i)),
  );
  const seconds = (performance.now() - start) / 1000;
  const sorted = latencies.slice(0, n).sort();
  const at = (q: number) => sorted[Math.min(n - 1, Math.floor(n * q))];
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  const rps = n / seconds;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    requests: n,
    seconds: r(seconds),
    rps: Math.round(rps),
    mean_ms: r(sum / n),
    p50_ms: r(at(0.5)),
    p90_ms: r(at(0.9)),
    p99_ms: r(at(0.99)),
    p999_ms: r(at(0.999)),
    max_ms: r(sorted[n - 1]),
    mean_bound_ms: r((o.connections / rps) * 1000),
    statuses,
  };
}

if (import.meta.main) {
  const result = await run(parseArgs(Deno.args));
  console.log("RESULT " + JSON.stringify(result));
}
