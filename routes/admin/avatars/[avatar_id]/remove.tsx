/**
 * Removes a photo avatar. A post without `confirm=yes` (no script to ask first) answers
 * with a confirmation page; with it, the avatar and every chunk are deleted and the list
 * shows it gone. Another tenant's avatar is "not found" to a tenant administrator.
 */
import { ConfirmForm } from "../../../../components/ConfirmAction.tsx";
import { Notice, PageHeader } from "../../../../components/ui.tsx";
import type { Ctx } from "../../../../lib/api/http.ts";
import { isOperator } from "../../../../lib/principal.ts";
import { redirect } from "../../../../lib/console/http.ts";
import {
  consoleState,
  errorPage,
  page,
  type PageProps,
  requireAdmin,
} from "../../../../lib/console/render.tsx";
import {
  administeredPhotoManifest,
  type PhotoManifest,
  removePhotoAvatar,
} from "../../../../lib/photo/mod.ts";

export const handler = {
  async POST(ctx: Ctx): Promise<Response> {
    const admin = requireAdmin(ctx);
    const form = consoleState(ctx).form;
    const tenant = isOperator(admin)
      ? form.get("tenant_id") ?? ""
      : admin.tenantId;
    const avatarId = ctx.params.avatar_id;
    const manifest = await administeredPhotoManifest(
      ctx.deps.kv,
      admin,
      tenant,
      avatarId,
    );
    if (!manifest) {
      return errorPage(
        ctx,
        404,
        "Avatar not found",
        `There is no photo avatar ${avatarId}.`,
      );
    }
    if (form.get("confirm") !== "yes") {
      return page(ctx, ConfirmRemove, manifest, {
        title: "Remove photo avatar",
        section: "avatars",
      });
    }
    await removePhotoAvatar(ctx.deps.kv, admin, tenant, avatarId);
    const q = new URLSearchParams({ tenant, removed: avatarId });
    return redirect(`/admin/avatars?${q}`);
  },
};

export default function ConfirmRemove(
  { data, csrf }: PageProps<PhotoManifest>,
) {
  return (
    <section class="narrow">
      <PageHeader title="Remove this photo avatar?" />
      <Notice kind="warning">
        <p>
          Photo avatar <strong>{data.name}</strong>{" "}
          (<code>{data.avatar_id}</code>) of tenant{" "}
          <code>{data.tenant_id}</code>{" "}
          is deleted with its prepared portrait. New sessions can no longer use
          it; sessions using it now keep it until they end. This cannot be
          undone.
        </p>
      </Notice>
      <ConfirmForm
        action={`/admin/avatars/${data.avatar_id}/remove`}
        csrf={csrf}
        label="Remove avatar"
        fields={{ tenant_id: data.tenant_id }}
        cancelHref={`/admin/avatars?tenant=${
          encodeURIComponent(data.tenant_id)
        }`}
      />
    </section>
  );
}
