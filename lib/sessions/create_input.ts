/**
 * What a create's input names, checked against the catalog, the tenant's photo
 * avatars and the deployment's provider endpoints, and the credentials it carries
 * (./create.ts).
 */
import {
  DEFAULT_AVATAR_ID,
  DEFAULT_BG_ID,
  findAvatar,
  findBackground,
  PHOTO_OWN_BG,
} from "../avatars.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import {
  EngineStartError,
  type ProviderCredentials,
} from "../ports/providers.ts";
import { vendorCUrl } from "../providers/vendor_c.ts";
import type { CreateSessionInput } from "../api/schemas.ts";
import { getPhotoManifest } from "../photo/mod.ts";
import { slotsForFrame } from "../ports/slots.ts";

/**
 * The avatar and background named by `avatar_config` (catalog defaults when omitted),
 * else 400 `AVTR_RENDER_MISCONFIGURED`. A photo avatar (`ph_…`, DECISIONS 12) must be
 * stored under `tenantId` (another tenant's reads as unknown); without `bg_id` it keeps
 * its own background (`PHOTO_OWN_BG`). `slots`: the render slots a session of it takes
 * (its picture's size: a catalog avatar and a square photo 1, another framing more).
 */
export async function resolveAvatar(
  deps: AppDeps,
  tenantId: string,
  config: CreateSessionInput["avatar_config"],
): Promise<{ avatarId: string; bgId: string; slots: number }> {
  const avatarId = config?.avatar_id ?? DEFAULT_AVATAR_ID;
  const photo = avatarId.startsWith("ph_");
  const manifest = photo
    ? await getPhotoManifest(deps.readKv, tenantId, avatarId)
    : null;
  const drawn = photo ? undefined : findAvatar(avatarId);
  if (!manifest && !drawn) {
    throw new ApiError(
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.avatar_id names no avatar of the catalog or of your tenant",
      { param: "avatar_config.avatar_id" },
    );
  }
  const slots = manifest
    ? slotsForFrame(manifest.width, manifest.height)
    : slotsForFrame(drawn!.size, drawn!.size);
  if (photo && config?.bg_id === undefined) {
    return { avatarId, bgId: PHOTO_OWN_BG, slots };
  }
  const bgId = config?.bg_id ?? DEFAULT_BG_ID;
  if (!findBackground(bgId)) {
    throw new ApiError(
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.bg_id names no background of the catalog",
      { param: "avatar_config.bg_id" },
    );
  }
  return { avatarId, bgId, slots };
}

/**
 * Refuses what the body's shape cannot tell but the deployment's config can: a
 * `vendor_c.signed_url` off the configured conversation endpoint (scheme, host, port,
 * path of `VENDOR_C_URL`) → 400 `AVTR_PROVIDER_MISCONFIGURED` with its `param`. The
 * adapter checks the same again at connect. Neither the URL (it holds a token) nor the
 * configured endpoint is echoed.
 */
export function checkProviderTargets(
  deps: AppDeps,
  input: CreateSessionInput,
): void {
  const signedUrl = input.provider_config.vendor_c?.signed_url;
  if (input.provider_type !== "vendor_c" || signedUrl === undefined) return;
  const endpoint = deps.config.providerEndpoints.vendorCUrl;
  try {
    vendorCUrl(endpoint, { agent_id: "", signed_url: signedUrl });
  } catch (err) {
    if (!(err instanceof EngineStartError)) throw err;
    // The configured endpoint is deployment detail: the message does not name it.
    throw new ApiError(
      "AVTR_PROVIDER_MISCONFIGURED",
      "provider_config.vendor_c.signed_url must be a wss:// URL on the provider's conversation endpoint",
      { param: "provider_config.vendor_c.signed_url" },
    );
  }
}

/** The credentials part of a validated request, for the vault. */
export function credentialsOf(input: CreateSessionInput): ProviderCredentials {
  const cfg = input.provider_config;
  switch (input.provider_type) {
    case "vendor_a_realtime":
      return { type: "vendor_a_realtime", ...cfg.vendor_a_realtime! };
    case "vendor_b":
      return { type: "vendor_b", ...cfg.vendor_b! };
    case "external_engine":
      return { type: "external_engine", ...cfg.external_engine! };
    case "vendor_c":
      return { type: "vendor_c", ...cfg.vendor_c! };
  }
}
