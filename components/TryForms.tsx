/**
 * The Try it page's parts (routes/admin/try.tsx): the start form (tenant, engine,
 * avatar, background, transport) and the talk panel that hosts the TryIt island.
 */
import { Csrf, Field, Notice } from "./ui.tsx";
import TryIt from "../islands/TryIt.tsx";
import { AVATARS, BACKGROUNDS } from "../lib/avatars.ts";
import { WORKLET_URL } from "../lib/console/bundle.ts";
import { sessionHref } from "../lib/console/format.ts";
import { Island } from "../lib/console/island.tsx";
import type { TryField, TryInput } from "../lib/console/try_it.ts";
import type { IceServer } from "../lib/config.ts";
import type { SessionRecord } from "../lib/sessions.ts";
import type { PhotoAvatarEntry } from "../lib/photo/mod.ts";

/** Where the page lives: its forms post here. */
export const TRY_PATH = "/admin/try";

const TRANSPORT_OPTIONS = [
  ["auto", "auto (the server picks)"],
  ["webrtc_sfu", "webrtc_sfu (WebRTC through the SFU)"],
  ["websocket_fmp4", "websocket_fmp4 (fMP4 over the WebSocket)"],
] as const;

export interface TryData {
  input: TryInput;
  errors: Partial<Record<TryField, string>>;
  /** Whether `TRY_ENGINE_URL` is set (the engine field then needs no hint). */
  engineConfigured: boolean;
  /** Whether the deployment has an SFU (`SFU_URL`; on a control plane, a node's). */
  sfuConfigured: boolean;
  /** ICE servers of the session being talked to (WebRTC only). */
  iceServers?: IceServer[];
  /** The session being talked to (or just ended). */
  session?: SessionRecord;
  /** The photo avatars of the form's tenant (DECISIONS 12), offered beside the catalog. */
  photoAvatars: PhotoAvatarEntry[];
  notice?: string;
}

/** The `<option>`s of a catalog (avatars, backgrounds), `selected` chosen. */
function CatalogOptions(
  props: { items: readonly { id: string; name: string }[]; selected: string },
) {
  return props.items.map((item) => (
    <option key={item.id} value={item.id} selected={item.id === props.selected}>
      {item.name}
    </option>
  ));
}

export function StartForm(
  props: { data: TryData; csrf: string; fixedTenant: boolean },
) {
  const { input, errors } = props.data;
  return (
    <form
      method="post"
      action={TRY_PATH}
      class="card form"
      aria-labelledby="try-start-title"
    >
      <h2 id="try-start-title">Start a session</h2>
      <Csrf token={props.csrf} />
      <input type="hidden" name="action" value="start" />
      {errors.form && <Notice kind="error">{errors.form}</Notice>}
      <div class="form-grid">
        <Field
          id="try-tenant"
          label="Tenant"
          errorId="try-tenant-error"
          error={errors.tenant}
          help={props.fixedTenant
            ? "Your tenant: the session counts against its concurrency limit."
            : "The session counts against this tenant's concurrency limit."}
        >
          {(control) => (
            <input
              name="tenant"
              required
              readOnly={props.fixedTenant}
              pattern="[A-Za-z0-9_\-]{1,64}"
              value={input.tenant}
              autocomplete="off"
              {...control}
            />
          )}
        </Field>
        <Field
          id="try-engine"
          label="Engine URL"
          class="try-wide"
          errorId="try-engine_url-error"
          error={errors.engine_url}
          help={props.data.engineConfigured
            ? "From TRY_ENGINE_URL. Any engine speaking ECEP v1 over wss:// works."
            : "A wss:// engine speaking ECEP v1. For a local example engine, run `deno task demo` (or set TRY_ENGINE_URL)."}
        >
          {(control) => (
            <input
              name="engine_url"
              inputMode="url"
              spellcheck={false}
              placeholder="wss://engine.example.com/ecep"
              value={input.engine_url}
              autocomplete="off"
              {...control}
            />
          )}
        </Field>
        <Field
          id="try-avatar"
          label="Avatar"
          errorId="try-avatar_id-error"
          error={errors.avatar_id}
        >
          {(control) => (
            <select name="avatar_id" {...control}>
              <CatalogOptions items={AVATARS} selected={input.avatar_id} />
              {props.data.photoAvatars.length > 0 && (
                <optgroup label={`Photo avatars of ${input.tenant}`}>
                  <CatalogOptions
                    items={props.data.photoAvatars.map((a) => ({
                      id: a.avatar_id,
                      name: a.name,
                    }))}
                    selected={input.avatar_id}
                  />
                </optgroup>
              )}
            </select>
          )}
        </Field>
        <Field
          id="try-bg"
          label="Background"
          errorId="try-bg_id-error"
          error={errors.bg_id}
        >
          {(control) => (
            <select name="bg_id" {...control}>
              {props.data.photoAvatars.length > 0 && (
                <option value="" selected={input.bg_id === ""}>
                  The photo's own (photo avatars)
                </option>
              )}
              <CatalogOptions items={BACKGROUNDS} selected={input.bg_id} />
            </select>
          )}
        </Field>
        <Field
          id="try-transport"
          label="Transport"
          errorId="try-transport-error"
          error={errors.transport}
          help={props.data.sfuConfigured
            ? "auto plays over WebRTC through the SFU while it answers, else over the WebSocket."
            : "This deployment has no SFU (SFU_URL): webrtc_sfu is refused, auto uses the WebSocket."}
        >
          {(control) => (
            <select name="transport" {...control}>
              {TRANSPORT_OPTIONS.map(([value, name]) => (
                <option
                  key={value}
                  value={value}
                  selected={value === input.transport}
                >
                  {name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <fieldset class="field try-wide">
          <legend>
            Engine authentication <span class="muted">(optional)</span>
          </legend>
          <div class="try-pair">
            <Field
              id="try-header-name"
              label="Header name"
              errorId="try-header_name-error"
              error={errors.header_name}
            >
              {(control) => (
                <input
                  name="header_name"
                  placeholder="authorization"
                  value={input.header_name}
                  autocomplete="off"
                  spellcheck={false}
                  {...control}
                />
              )}
            </Field>
            <div class="field">
              <label for="try-header-value">Header value</label>
              <input
                id="try-header-value"
                name="header_value"
                type="password"
                placeholder="Bearer …"
                autocomplete="off"
                aria-describedby="try-header-value-help"
              />
              <p id="try-header-value-help" class="help">
                Sent only to the engine; never shown again.
              </p>
            </div>
          </div>
        </fieldset>
      </div>
      <button type="submit" class="btn btn-primary">Start session</button>
    </form>
  );
}

export function Talk(
  props: { s: SessionRecord; csrf: string; iceServers: IceServer[] },
) {
  const { s, csrf } = props;
  return (
    <section class="card try-card" aria-labelledby="try-talk-title">
      <div class="try-head">
        <h2 id="try-talk-title">
          Talking to <span class="mono">{s.session_id}</span>
        </h2>
        <p class="muted">
          Tenant <code>{s.tenant_id}</code> · {s.avatar_id} / {s.bg_id} ·{" "}
          <code>{s.transport}</code> ·{" "}
          <a href={sessionHref(s.session_id)}>Session details</a>
        </p>
      </div>
      <Island
        component={TryIt}
        props={{
          sessionId: s.session_id,
          csrf,
          tokenUrl: `${TRY_PATH}/token`,
          workletUrl: WORKLET_URL,
          transport: s.transport,
          iceServers: props.iceServers,
        }}
      />
      <form method="post" action={TRY_PATH} class="row try-end">
        <Csrf token={csrf} />
        <input type="hidden" name="action" value="end" />
        <input type="hidden" name="session_id" value={s.session_id} />
        <button type="submit" class="btn btn-danger">End session</button>
        <span class="help">
          Ends it for everyone (the same call as POST /v1/sessions/…/end).
        </span>
      </form>
    </section>
  );
}
