/**
 * Provider pre-flight at create (DECISIONS 4): the provider work that must succeed
 * before a session is stored. For `vendor_c` with an `api_key` and no `signed_url`, the
 * signed conversation URL is minted here (the key travels in a header only, never in a
 * URL, log line or error). Other providers pass through.
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../api/errors.ts";
import { VENDOR_C_CONVERSATION_PATH, wssUrl } from "../api/schemas.ts";
import type { ProviderCredentials } from "./port.ts";

const signedUrlSchema = wssUrl(VENDOR_C_CONVERSATION_PATH);

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
  let body: unknown;
  try {
    if (!res.ok) {
      await res.body?.cancel();
      deps.log.warn("provider pre-flight refused", {
        provider_type: "vendor_c",
        upstream_status: res.status,
      });
      throw new ApiError(
        "AVTR_PROVIDER_DOWNSTREAM_FAILED",
        "The conversation provider refused to start the session",
      );
    }
    body = await res.json();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (signal.aborted) throw timeoutError();
    body = null;
  }
  const candidate = (body as { signed_url?: unknown } | null)?.signed_url;
  const parsed = signedUrlSchema.safeParse(candidate);
  if (!parsed.success) {
    deps.log.warn("provider pre-flight answered without a usable signed URL", {
      provider_type: "vendor_c",
    });
    throw new ApiError(
      "AVTR_PROVIDER_DOWNSTREAM_FAILED",
      "The conversation provider answered with an unusable response",
    );
  }
  return parsed.data;
}
