/**
 * The photo avatars page's parts: the operator's tenant picker, the upload form (name,
 * photo, framing, consent; errors in place, values kept) and the list with previews (in
 * each avatar's framing) and remove.
 */
import { FRAMINGS, type PhotoAvatarEntry } from "../lib/photo/mod.ts";
import { ConfirmAction } from "./ConfirmAction.tsx";
import { Csrf, DataTable, EmptyState, Field, Notice, Time } from "./ui.tsx";

export interface UploadInput {
  name: string;
  consent: boolean;
  /** The framing asked for (a `FRAMINGS` key; anything else is refused on upload). */
  framing: string;
}

/** Each framing as the form offers it. */
const FRAMING_LABELS: Record<keyof typeof FRAMINGS, string> = {
  square: "Square, 512 × 512",
  landscape: "Landscape, 1280 × 720 (16:9)",
  portrait: "Portrait, 720 × 1280 (9:16)",
};

/** A preview's box on the page: `side` px on its longer side, in its proportions. */
export function previewBox(
  a: { width: number; height: number },
  side: number,
): { width: number; height: number } {
  const k = side / Math.max(a.width, a.height);
  return { width: Math.round(a.width * k), height: Math.round(a.height * k) };
}

/** The preview image's address: the tenant is part of it, never implied. */
export function previewHref(tenant: string, avatarId: string): string {
  return `/admin/avatars/${avatarId}/preview?tenant=${
    encodeURIComponent(tenant)
  }`;
}

export function TenantPicker(props: { tenant: string; error?: string }) {
  return (
    <form method="get" action="/admin/avatars" class="filters" role="search">
      <div class="field inline">
        <label for="avatars-tenant">Tenant</label>
        <input
          id="avatars-tenant"
          name="tenant"
          value={props.tenant}
          required
          pattern="[A-Za-z0-9_\-]{1,64}"
          placeholder="tenant id"
          aria-invalid={props.error ? "true" : undefined}
        />
      </div>
      <button type="submit" class="btn btn-secondary">Show</button>
      {props.error && <Notice kind="error">{props.error}</Notice>}
    </form>
  );
}

export function UploadForm(
  props: {
    tenant: string;
    input: UploadInput;
    error?: string;
    csrf: string;
    full: boolean;
  },
) {
  return (
    <form
      method="post"
      action="/admin/avatars"
      enctype="multipart/form-data"
      class="card form"
      aria-labelledby="upload-title"
    >
      <h2 id="upload-title">Add a photo avatar</h2>
      <Csrf token={props.csrf} />
      <input type="hidden" name="tenant_id" value={props.tenant} />
      {props.error && (
        <Notice kind="error" id="upload-error">{props.error}</Notice>
      )}
      {props.full && (
        <Notice kind="warning">
          Tenant <code>{props.tenant}</code>{" "}
          keeps as many photo avatars as it may. Remove one to add another.
        </Notice>
      )}
      <div class="form-grid">
        <Field id="avatar-name" label="Name" errorId="avatar-name-error">
          {(control) => (
            <input
              {...control}
              name="name"
              required
              maxLength={80}
              value={props.input.name}
              autocomplete="off"
            />
          )}
        </Field>
        <Field
          id="avatar-photo"
          label="Portrait"
          errorId="avatar-photo-error"
          help="JPEG or PNG, at most 8 MiB and 4096 px a side; one face, at least 160 px wide, looking at the camera"
        >
          {(control) => (
            <input
              {...control}
              type="file"
              name="photo"
              required
              accept="image/jpeg,image/png"
            />
          )}
        </Field>
        <Field
          id="avatar-framing"
          label="Framing"
          errorId="avatar-framing-error"
          help="The picture's and the stream's shape; landscape and portrait need room around the face in the photo"
        >
          {(control) => (
            <select {...control} name="framing">
              {Object.entries(FRAMING_LABELS).map(([value, label]) => (
                <option
                  key={value}
                  value={value}
                  selected={props.input.framing === value}
                >
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <label class="check">
        <input
          type="checkbox"
          name="consent"
          value="yes"
          required
          checked={props.input.consent}
        />{" "}
        I have the pictured person's consent to turn this photo into a talking
        avatar.
      </label>
      <div class="row">
        <button type="submit" class="btn btn-primary" disabled={props.full}>
          Upload and prepare
        </button>
      </div>
    </form>
  );
}

export function AvatarList(
  props: {
    tenant: string;
    avatars: PhotoAvatarEntry[];
    csrf: string;
    now: number;
  },
) {
  if (props.avatars.length === 0) {
    return (
      <EmptyState title={`No photo avatars for tenant ${props.tenant}`}>
        Upload a portrait with the form; it is checked and prepared at once.
      </EmptyState>
    );
  }
  return (
    <DataTable
      label="Photo avatars"
      columns={["Preview", "Name", "Avatar id", "Framing", "Added (UTC)"]}
      actions
    >
      {props.avatars.map((a) => (
        <tr key={a.avatar_id} data-avatar-id={a.avatar_id}>
          <td data-label="Preview">
            <img
              src={previewHref(props.tenant, a.avatar_id)}
              {...previewBox(a, 96)}
              alt={`Preview of ${a.name}`}
              loading="lazy"
            />
          </td>
          <td data-label="Name">{a.name}</td>
          <td data-label="Avatar id" class="mono">{a.avatar_id}</td>
          <td data-label="Framing" class="nowrap">
            {a.framing} {a.width} × {a.height}
          </td>
          <td class="nowrap" data-label="Added">
            <Time ms={a.created_at} now={props.now} />
          </td>
          <td>
            <form method="post" action={`/admin/avatars/${a.avatar_id}/remove`}>
              <Csrf token={props.csrf} />
              <input type="hidden" name="tenant_id" value={props.tenant} />
              <ConfirmAction
                label="Remove"
                message={`Remove photo avatar ${a.name} (${a.avatar_id})? New sessions can no longer use it; sessions using it now keep it until they end.`}
                confirmLabel="Remove avatar"
                danger
              />
            </form>
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
