/**
 * `DELETE /v1/api-keys/{key_id}`: revokes an API key (DECISIONS 2). Needs `keys:admin`;
 * a tenant administrator revokes its own tenant's keys only (another tenant's key → 404
 * `AVTR_API_KEY_NOT_FOUND`, as for an unknown key).
 */
import { revokeApiKey } from "../../../lib/auth/api_key_admin.ts";
import { authenticate } from "../../../lib/auth/authenticate.ts";
import type { Ctx } from "../../../lib/api/http.ts";

export const handler = {
  /** 204 whether the key was live or already revoked; 404 for an unknown key. */
  async DELETE(ctx: Ctx): Promise<Response> {
    const { principal } = await authenticate(ctx, "keys:admin");
    await revokeApiKey(ctx.deps, principal, ctx.params.key_id);
    return new Response(null, { status: 204 });
  },
};
