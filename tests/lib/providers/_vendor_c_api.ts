/**
 * A real HTTPS fake of the `vendor_c` signed-URL API on loopback (test certificate; the
 * test task trusts its CA through DENO_CERT). Records each request's URL and key header.
 * Modes: `ok` (a URL on `host`), `error` (401), `garbage` (not wss), `foreign` (wss on
 * another host), `huge` (a 1 MiB answer), `hold` (no answer until `release()`).
 */
const FIXTURES = new URL("../../fixtures/tls/", import.meta.url);

export type VendorCMode =
  | "ok"
  | "error"
  | "garbage"
  | "foreign"
  | "huge"
  | "hold";

export interface VendorCApi {
  /** `https://localhost:PORT`, for `VENDOR_C_API_URL`. */
  origin: string;
  mode: VendorCMode;
  /** Requests seen: the full URL and the `xi-api-key` header. */
  requests: { url: string; apiKey: string | null }[];
  /** Resolves when the next request arrives. */
  nextRequest(): Promise<void>;
  /** Answers every held request (mode `hold`) as `ok`. */
  release(): void;
  close(): Promise<void>;
}

/** The conversation host of the default `VENDOR_C_URL` (lib/config.ts). */
export const DEFAULT_VENDOR_C_HOST = "api.elevenlabs.io";

/** The signed URL the fake mints for `agentId`, on `host` (the configured endpoint's). */
export function fakeSignedUrl(
  agentId: string,
  host = DEFAULT_VENDOR_C_HOST,
): string {
  return `wss://${host}/v1/convai/conversation?agent_id=${agentId}&token=signed-${agentId}`;
}

/** Starts the fake on 127.0.0.1, port chosen by the system. */
export function startVendorCApi(
  mode: VendorCMode = "ok",
  host = DEFAULT_VENDOR_C_HOST,
): VendorCApi {
  let waiters: (() => void)[] = [];
  let held: (() => void)[] = [];
  const api: VendorCApi = {
    origin: "",
    mode,
    requests: [],
    nextRequest: () => new Promise((resolve) => waiters.push(resolve)),
    release() {
      for (const r of held.splice(0)) r();
    },
    close: async () => {
      api.release();
      await server.shutdown();
    },
  };
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: Deno.readTextFileSync(new URL("localhost.crt", FIXTURES)),
    key: Deno.readTextFileSync(new URL("localhost.key", FIXTURES)),
    onListen: () => {},
  }, async (req) => {
    const url = new URL(req.url);
    api.requests.push({ url: req.url, apiKey: req.headers.get("xi-api-key") });
    for (const w of waiters.splice(0)) w();
    waiters = [];
    if (url.pathname !== "/v1/convai/conversation/get-signed-url") {
      return new Response("not found", { status: 404 });
    }
    if (api.mode === "hold") {
      await new Promise<void>((resolve) => held.push(resolve));
      held = held.filter(() => true);
    }
    if (api.mode === "error") {
      return Response.json({ detail: "agent not found" }, { status: 401 });
    }
    if (api.mode === "garbage") {
      return Response.json({ signed_url: "https://elsewhere.example/x" });
    }
    if (api.mode === "foreign") {
      return Response.json({
        signed_url: fakeSignedUrl("x", "elsewhere.example"),
      });
    }
    if (api.mode === "huge") {
      return Response.json({
        signed_url: fakeSignedUrl(url.searchParams.get("agent_id") ?? ""),
        padding: "x".repeat(1024 * 1024),
      });
    }
    return Response.json({
      signed_url: fakeSignedUrl(url.searchParams.get("agent_id") ?? "", host),
    });
  });
  api.origin = `https://localhost:${server.addr.port}`;
  return api;
}
