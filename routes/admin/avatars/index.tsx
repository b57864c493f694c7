/**
 * Photo avatars (DECISIONS 12): a tenant's list with previews, the upload form (a
 * multipart POST the console middleware reads up to the photo's limit), and the preview
 * of a new avatar right after it is prepared. A tenant administrator sees and changes
 * its own tenant only; the operator picks a tenant (lib/photo/ enforces both).
 */
import {
  AvatarList,
  previewBox,
  previewHref,
  TenantPicker,
  UploadForm,
  type UploadInput,
} from "../../../components/PhotoAvatars.tsx";
import { Notice, PageHeader } from "../../../components/ui.tsx";
import { TENANT_ID_PATTERN } from "../../../lib/auth/api_keys.ts";
import { isOperator } from "../../../lib/principal.ts";
import { ApiError } from "../../../lib/errors.ts";
import type { Ctx } from "../../../lib/api/http.ts";
import { signedInAs } from "../../../lib/console/session.ts";
import {
  consoleState,
  page,
  type PageProps,
  requireAdmin,
  requireSession,
} from "../../../lib/console/render.tsx";
import {
  addPhotoAvatar,
  listPhotoAvatars,
  type PhotoAvatarEntry,
  photoEntryOf,
  PhotoRefusal,
} from "../../../lib/photo/mod.ts";

interface AvatarsData {
  /** The tenant shown ("" until the operator picks one). */
  tenant: string;
  tenantError?: string;
  avatars: PhotoAvatarEntry[];
  max: number;
  created?: PhotoAvatarEntry;
  removed?: string;
  upload: UploadInput;
  uploadError?: string;
}

/** The tenant a request is about: the operator's pick, a tenant administrator's own. */
function tenantOf(ctx: Ctx, asked: string | null): string {
  const admin = requireAdmin(ctx);
  return isOperator(admin) ? (asked ?? "").trim() : admin.tenantId;
}

async function load(
  ctx: Ctx,
  tenant: string,
  extra: Partial<AvatarsData>,
): Promise<AvatarsData> {
  const data: AvatarsData = {
    tenant,
    avatars: [],
    max: ctx.deps.config.avatarStoreMaxPerTenant,
    upload: { name: "", consent: false, framing: "square" },
    ...extra,
  };
  if (tenant && !TENANT_ID_PATTERN.test(tenant)) {
    data.tenantError =
      "Tenant ids are 1 to 64 characters of A-Z, a-z, 0-9, _ or -.";
  } else if (tenant) {
    data.avatars = await listPhotoAvatars(
      ctx.deps.kv,
      requireAdmin(ctx),
      tenant,
    );
  }
  return data;
}

function show(
  ctx: Ctx,
  data: AvatarsData,
  status = 200,
  headers?: HeadersInit,
) {
  return page(ctx, AvatarsPage, data, {
    title: "Photo avatars",
    section: "avatars",
    status,
    headers,
  });
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const q = ctx.url.searchParams;
    const tenant = tenantOf(ctx, q.get("tenant"));
    return show(
      ctx,
      await load(ctx, tenant, { removed: q.get("removed") ?? undefined }),
    );
  },

  /** Checks, prepares and stores the uploaded portrait; answers with its preview. */
  async POST(ctx: Ctx): Promise<Response> {
    const { form, files } = consoleState(ctx);
    const admin = requireAdmin(ctx);
    // The form's tenant as sent: lib/photo refuses one `admin` does not administer.
    const asked = (form.get("tenant_id") ?? "").trim();
    const upload: UploadInput = {
      name: (form.get("name") ?? "").trim(),
      consent: form.get("consent") === "yes",
      framing: form.get("framing") ?? "square",
    };
    const photo = files.get("photo");
    try {
      const avatar = await addPhotoAvatar(ctx.deps, admin, {
        tenantId: asked,
        name: upload.name,
        bytes: photo ? await photo.bytes() : new Uint8Array(),
        consentBy: upload.consent
          ? signedInAs(requireSession(ctx).record)
          : null,
        framing: upload.framing,
      });
      ctx.deps.metrics.photoPreparations.inc({ result: "ok" });
      const created = photoEntryOf(avatar);
      return show(ctx, await load(ctx, asked, { created }), 201);
    } catch (err) {
      const tenant = tenantOf(ctx, asked);
      if (err instanceof ApiError && err.code === "AVTR_AUTH_FORBIDDEN") {
        const uploadError =
          "You administer your own tenant only: add photo avatars to it.";
        return show(ctx, await load(ctx, tenant, { upload, uploadError }), 403);
      }
      if (!(err instanceof PhotoRefusal)) throw err;
      ctx.deps.metrics.photoPreparations.inc({ result: err.reason });
      const data = await load(ctx, tenant, {
        upload,
        uploadError: `The photo was not added: ${err.message}.`,
      });
      return err.retryable
        ? show(ctx, data, 503, { "retry-after": "5" })
        : show(ctx, data, 400);
    }
  },
};

export default function AvatarsPage(
  { data, csrf, now, admin }: PageProps<AvatarsData>,
) {
  const operator = admin !== null && isOperator(admin);
  const ready = data.tenant !== "" && !data.tenantError;
  return (
    <>
      <PageHeader
        title="Photo avatars"
        lead="A portrait becomes a live avatar that sessions of its tenant name in avatar_config.avatar_id. The photo is checked and prepared once, here."
      />
      {data.created && (
        <Notice
          kind="success"
          title={`${data.created.name} is ready`}
          id="created-avatar"
        >
          <p>
            Use it with{" "}
            <code>
              {`"avatar_config": {"avatar_id": "${data.created.avatar_id}"}`}
            </code>{" "}
            in sessions of tenant <code>{data.tenant}</code>.
          </p>
          <img
            src={previewHref(data.tenant, data.created.avatar_id)}
            {...previewBox(data.created, 320)}
            alt={`The prepared portrait of ${data.created.name}, ${data.created.framing} ${data.created.width} × ${data.created.height}`}
          />
        </Notice>
      )}
      {data.removed && (
        <Notice kind="success">
          Photo avatar <code>{data.removed}</code>{" "}
          is removed. Sessions already using it keep it until they end.
        </Notice>
      )}
      {operator && (
        <TenantPicker tenant={data.tenant} error={data.tenantError} />
      )}
      {ready && (
        <>
          <UploadForm
            tenant={data.tenant}
            input={data.upload}
            error={data.uploadError}
            csrf={csrf}
            full={data.avatars.length >= data.max}
          />
          <section aria-labelledby="avatars-title">
            <h2 id="avatars-title">
              Photo avatars of {data.tenant} ({data.avatars.length} of{" "}
              {data.max})
            </h2>
            <AvatarList
              tenant={data.tenant}
              avatars={data.avatars}
              csrf={csrf}
              now={now}
            />
          </section>
        </>
      )}
    </>
  );
}
