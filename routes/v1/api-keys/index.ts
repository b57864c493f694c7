/**
 * `POST /v1/api-keys`: mints an API key (DECISIONS 2). Needs `keys:admin`; a tenant
 * administrator mints for its own tenant only (another tenant → 403 `AVTR_AUTH_FORBIDDEN`).
 */
import {
  type ApiKeyCreated,
  apiKeyCreateSchema,
  createApiKey,
} from "../../../lib/auth/api_keys.ts";
import { authenticate } from "../../../lib/auth/authenticate.ts";
import { parseOrThrow, readJsonObject } from "../../../lib/api/body.ts";
import { type Ctx, json } from "../../../lib/api/http.ts";

export const handler = {
  /** 201 with the key's plaintext in `api_key`: the only time it is ever shown. */
  async POST(ctx: Ctx): Promise<Response> {
    const { principal } = await authenticate(ctx, "keys:admin");
    const input = parseOrThrow(
      apiKeyCreateSchema,
      await readJsonObject(ctx.req, ctx.deps.config.requestBodyTimeoutMs),
    );
    const { key, api_key } = await createApiKey(ctx.deps, principal, input);
    const body: ApiKeyCreated = {
      key_id: key.key_id,
      api_key,
      tenant_id: key.tenant_id,
      scopes: key.scopes,
      created_at: key.created_at,
    };
    if (key.name !== undefined) body.name = key.name;
    if (key.expires_at !== undefined) body.expires_at = key.expires_at;
    return json(body, 201, { "cache-control": "no-store" });
  },
};
