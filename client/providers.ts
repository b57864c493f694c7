/**
 * Typed create bodies, one helper per conversation provider: the per-session credential
 * your backend minted with the vendor (docs/providers.md says how, per vendor) goes in,
 * a `POST /v1/sessions` body with exactly that provider's `provider_config` key comes
 * out. Pass the result to `AvatarClient.createSession`.
 */
import type { CreateSessionRequest, ProviderConfig } from "./api_types.ts";

/** The session options beside the provider: transport, avatar, webhook. */
export type SessionOptions = Omit<
  CreateSessionRequest,
  "provider_type" | "provider_config"
>;

function required(value: string | undefined, name: string): void {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${name} is required`);
  }
}

/**
 * An OpenAI Realtime session (`vendor_a_realtime`): `client_secret` is the ephemeral
 * secret your backend got from `POST https://api.openai.com/v1/realtime/client_secrets`
 * (the model and voice are bound into it).
 */
export function vendorARealtimeSession(
  config: NonNullable<ProviderConfig["vendor_a_realtime"]>,
  options: SessionOptions = {},
): CreateSessionRequest {
  required(config.client_secret, "client_secret");
  return {
    ...options,
    provider_type: "vendor_a_realtime",
    provider_config: {
      vendor_a_realtime: { client_secret: config.client_secret },
    },
  };
}

/**
 * A Cartesia agent session (`vendor_b`): an access token with the `agent` grant and the
 * agent's id.
 */
export function vendorBSession(
  config: NonNullable<ProviderConfig["vendor_b"]>,
  options: SessionOptions = {},
): CreateSessionRequest {
  required(config.access_token, "access_token");
  required(config.agent_id, "agent_id");
  return {
    ...options,
    provider_type: "vendor_b",
    provider_config: { vendor_b: { ...config } },
  };
}

/**
 * An ElevenLabs agent session (`vendor_c`): a public agent by `agent_id`, or a private
 * one with the `signed_url` your backend got from
 * `GET https://api.elevenlabs.io/v1/convai/conversation/get-signed-url` (or, less
 * safely, an `api_key` the service sends as `xi-api-key`).
 */
export function vendorCSession(
  config: NonNullable<ProviderConfig["vendor_c"]>,
  options: SessionOptions = {},
): CreateSessionRequest {
  required(config.agent_id, "agent_id");
  const out: NonNullable<ProviderConfig["vendor_c"]> = {
    agent_id: config.agent_id,
  };
  if (config.signed_url !== undefined) out.signed_url = config.signed_url;
  if (config.api_key !== undefined) out.api_key = config.api_key;
  return {
    ...options,
    provider_type: "vendor_c",
    provider_config: { vendor_c: out },
  };
}

/**
 * Your own engine (`external_engine`, docs/engine-protocol.md): its `wss://` URL, the
 * headers of the upgrade (e.g. a per-session key) and, optionally, the user audio rate.
 */
export function externalEngineSession(
  config: NonNullable<ProviderConfig["external_engine"]>,
  options: SessionOptions = {},
): CreateSessionRequest {
  required(config.url, "url");
  return {
    ...options,
    provider_type: "external_engine",
    provider_config: {
      external_engine: {
        url: config.url,
        auth_headers: { ...config.auth_headers },
        ...(config.user_sample_rate === undefined
          ? {}
          : { user_sample_rate: config.user_sample_rate }),
      },
    },
  };
}
