/**
 * HTTP/1.1 by hand over TCP, for what `fetch` will not send: a declared length with a
 * body that never comes, a body without `Content-Length`, headers in any order.
 */

export interface RawAnswer {
  status: number;
  text: string;
}

/**
 * Sends `head` (the request line and headers, without the blank line) and `body`, then
 * reads the answer. Resolves with the status and the raw answer, or null when none came
 * in `timeoutMs` (a server still waiting for the rest of a declared body).
 */
export async function rawRequest(
  port: number,
  head: string,
  body: Uint8Array = new Uint8Array(),
  timeoutMs = 3_000,
): Promise<RawAnswer | null> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const enc = new TextEncoder();
    await conn.write(enc.encode(head.replace(/\n/g, "\r\n") + "\r\n\r\n"));
    if (body.byteLength) await conn.write(body);
    const buf = new Uint8Array(16 * 1024);
    let got = "";
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const n = await Promise.race([
        conn.read(buf),
        new Promise<"late">((r) =>
          setTimeout(() => r("late"), Math.max(1, deadline - Date.now()))
        ),
      ]);
      if (n === "late" || n === null) break;
      got += new TextDecoder().decode(buf.subarray(0, n));
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m && got.includes("\r\n\r\n")) {
        return { status: Number(m[1]), text: got };
      }
    }
    return null;
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
  }
}

/** Sends `head` and `partial` of a longer declared body, and leaves the socket open. */
export async function stalledRequest(
  port: number,
  head: string,
  partial: Uint8Array,
): Promise<Deno.TcpConn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(head.replace(/\n/g, "\r\n") + "\r\n\r\n"),
  );
  await conn.write(partial);
  return conn;
}
