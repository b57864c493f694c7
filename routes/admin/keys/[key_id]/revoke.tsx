/**
 * Revokes a key. A post without `confirm=yes` (no script to ask first) answers with a
 * confirmation page; with it, the key is revoked at once and the list shows it. Another
 * tenant's key is "not found" to a tenant administrator (lib/auth/api_keys.ts).
 */
import { Csrf, Notice, PageHeader } from "../../../../components/ui.tsx";
import { getApiKey, revokeApiKey } from "../../../../lib/auth/api_key_admin.ts";
import { type ApiKeyView } from "../../../../lib/auth/api_keys.ts";
import { redirect } from "../../../../lib/console/http.ts";
import {
  consoleState,
  errorPage,
  page,
  type PageProps,
  requireAdmin,
} from "../../../../lib/console/render.tsx";
import type { Ctx } from "../../../../lib/api/http.ts";

export const handler = {
  async POST(ctx: Ctx): Promise<Response> {
    const keyId = ctx.params.key_id;
    const admin = requireAdmin(ctx);
    const key = await getApiKey(ctx.deps, admin, keyId);
    if (!key) {
      return errorPage(
        ctx,
        404,
        "Key not found",
        `There is no API key ${keyId}.`,
      );
    }
    if (consoleState(ctx).form.get("confirm") !== "yes") {
      return page(ctx, ConfirmRevoke, key, {
        title: "Revoke key",
        section: "keys",
      });
    }
    await revokeApiKey(ctx.deps, admin, keyId);
    return redirect(`/admin/keys?revoked=${encodeURIComponent(keyId)}`);
  },
};

export default function ConfirmRevoke({ data, csrf }: PageProps<ApiKeyView>) {
  return (
    <section class="narrow">
      <PageHeader title="Revoke this key?" />
      <Notice kind="warning">
        <p>
          Key <code>{data.key_id}</code>
          {data.name ? ` (${data.name})` : ""} of tenant{" "}
          <code>{data.tenant_id}</code>{" "}
          will be refused on its next request, on every instance. This cannot be
          undone.
        </p>
      </Notice>
      <form
        method="post"
        action={`/admin/keys/${data.key_id}/revoke`}
        class="row"
      >
        <Csrf token={csrf} />
        <input type="hidden" name="confirm" value="yes" />
        <button type="submit" class="btn btn-danger">Revoke key</button>
        <a href="/admin/keys" class="btn btn-quiet">Cancel</a>
      </form>
    </section>
  );
}
