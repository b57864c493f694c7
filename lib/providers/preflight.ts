/**
 * Provider pre-flight at create (DECISIONS 4): the provider work that must succeed
 * before a session is stored. For `vendor_c` with an `api_key` and no `signed_url`, the
 * signed conversation URL is minted here (the key travels in a header only, never in a
 * URL, log line or error). Other providers pass through.
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { VENDOR_C_CONVERSATION_PATH, wssUrl } from "../api/schemas.ts";
import { z } from "zod";
import {
  EngineStartError,
  type ProviderCredentials,
} from "../ports/providers.ts";
import { vendorCUrl } from "./vendor_c.ts";

/** Largest signed-URL answer read; a longer body is an unusable answer. */
export const MAX_PREFLIGHT_BODY_BYTES = 16 * 1024;

/** The signed-URL answer: the fields used, each typed (others ignored). */
const signedUrlAnswer = z.object({
  signed_url: wssUrl(VENDOR_C_CONVERSATION_PATH),
});

/**
 * Completes `creds` with what the provider must hand out before start. Rejects with 502
 * `AVTR_PROVIDER_DOWNSTREAM_FAILED` (upstream refused or answered nonsense), 503
 * `AVTR_PROVIDER_UNAVAILABLE` (unreachable) or 504 `AVTR_PROVIDER_TIMEOUT` (`signal`
 * aborted: the start timeout passed).
 */
export async function preflightProvider(
  deps: AppDeps,
  creds: ProviderCredentials,
  signal: AbortSignal,
): Promise<ProviderCredentials> {
  if (creds.type !== "vendor_c" || !creds.api_key || creds.signed_url) {
    return creds;
  }
  const signedUrl = await mintVendorCSignedUrl(
    deps,
    creds.agent_id,
    creds.api_key,
    signal,
  );
  return { ...creds, signed_url: signedUrl };
}

function timeoutError(): ApiError {
  return new ApiError(
    "AVTR_PROVIDER_TIMEOUT",
    "The conversation provider did not answer in time",
  );
}

async function mintVendorCSignedUrl(
  deps: AppDeps,
  agentId: string,
  apiKey: string,
  signal: AbortSignal,
): Promise<string> {
  if (signal.aborted) throw timeoutError();
  const base = deps.config.providerEndpoints.vendorCApiUrl.replace(/\/+$/, "");
  const url =
    `${base}/v1/convai/conversation/get-signed-url?${new URLSearchParams(
      { agent_id: agentId },
    )}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: "GET",
      headers: { "xi-api-key": apiKey, accept: "application/json" },
      redirect: "error",
      signal,
    });
  } catch (err) {
    if (signal.aborted) throw timeoutError();
    deps.log.warn("provider pre-flight unreachable", {
      provider_type: "vendor_c",
      err: err instanceof Error ? err.name : "error",
    });
    throw new ApiError(
      "AVTR_PROVIDER_UNAVAILABLE",
      "The conversation provider is unavailable",
    );
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    deps.log.warn("provider pre-flight refused", {
      provider_type: "vendor_c",
      upstream_status: res.status,
    });
    throw new ApiError(
      "AVTR_PROVIDER_DOWNSTREAM_FAILED",
      "The conversation provider refused to start the session",
    );
  }
  let body: unknown = null;
  try {
    const text = await readBounded(res, MAX_PREFLIGHT_BODY_BYTES);
    if (text !== null) body = JSON.parse(text);
  } catch {
    if (signal.aborted) throw timeoutError();
  }
  const parsed = signedUrlAnswer.safeParse(body);
  const signedUrl = parsed.success ? parsed.data.signed_url : null;
  if (signedUrl === null || !onConversationEndpoint(deps, signedUrl)) {
    // Neither the answer nor the configured endpoint is named: the one may hold a
    // token, the other is deployment detail.
    deps.log.warn("provider pre-flight answered without a usable signed URL", {
      provider_type: "vendor_c",
    });
    throw new ApiError(
      "AVTR_PROVIDER_DOWNSTREAM_FAILED",
      "The conversation provider answered with an unusable response",
    );
  }
  return signedUrl;
}

/** Whether `signedUrl` is on `VENDOR_C_URL`'s host and path, as the adapter requires. */
function onConversationEndpoint(deps: AppDeps, signedUrl: string): boolean {
  try {
    vendorCUrl(deps.config.providerEndpoints.vendorCUrl, {
      agent_id: "",
      signed_url: signedUrl,
    });
    return true;
  } catch (err) {
    if (err instanceof EngineStartError) return false;
    throw err;
  }
}

/** `res`'s body as text, or null when it passes `max` bytes (reading stops there). */
async function readBounded(res: Response, max: number): Promise<string | null> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    all.set(c, off);
    off += c.length;
  }
  return new TextDecoder().decode(all);
}
