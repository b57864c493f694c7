/**
 * Try it: start an `external_engine` session for a chosen tenant and talk to the avatar
 * in the page. The start form posts here; the session is created with the same lib call
 * as `POST /v1/sessions` (so validation and errors are the API's, shown in place), then
 * the browser is sent to `?session=<id>`, where the TryIt island plays it. No media token
 * is rendered: the island fetches one from `/admin/try/token`. End calls `endSession`,
 * like the console's session page.
 */
import {
  Csrf,
  Field,
  Notice,
  PageHeader,
  StatusBadge,
} from "../../components/ui.tsx";
import TryIt from "../../islands/TryIt.tsx";
import { AVATARS, BACKGROUNDS } from "../../lib/avatars.ts";
import { WORKLET_URL } from "../../lib/console/bundle.ts";
import { isLive, sessionHref } from "../../lib/console/format.ts";
import { redirect } from "../../lib/console/http.ts";
import { Island } from "../../lib/console/island.tsx";
import {
  consoleState,
  page,
  type PageProps,
  requireAdmin,
  requireSession,
} from "../../lib/console/render.tsx";
import {
  defaultTryInput,
  placeApiError,
  readTryForm,
  rememberTrySession,
  type TryField,
  type TryInput,
  trySessionTenant,
} from "../../lib/console/try.ts";
import { ApiError } from "../../lib/api/errors.ts";
import type { IceServer } from "../../lib/config.ts";
import { iceServersFor } from "../../lib/sfu/mod.ts";
import { deploymentHasSfu } from "../../lib/nodes/registry.ts";
import type { Ctx } from "../../lib/api/http.ts";
import { isOperator } from "../../lib/auth/principal.ts";
import {
  createSession,
  endSession,
  isSessionId,
  readSession,
  type SessionRecord,
} from "../../lib/sessions.ts";

const PATH = "/admin/try";

const TRANSPORT_OPTIONS = [
  ["auto", "auto (the server picks)"],
  ["webrtc_sfu", "webrtc_sfu (WebRTC through the SFU)"],
  ["websocket_fmp4", "websocket_fmp4 (fMP4 over the WebSocket)"],
] as const;

interface TryData {
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
  notice?: string;
}

function show(ctx: Ctx, data: TryData, status = 200): Response {
  return page(ctx, TryPage, data, { title: "Try it", section: "try", status });
}

async function formData(
  ctx: Ctx,
  extra: Partial<TryData> = {},
): Promise<TryData> {
  return {
    input: defaultTryInput(ctx.deps, requireAdmin(ctx)),
    errors: {},
    engineConfigured: ctx.deps.config.tryEngineUrl !== undefined,
    sfuConfigured: await deploymentHasSfu(ctx.deps),
    ...extra,
  };
}

/** The session `id` when this console session started it here, else null. */
async function ownSession(
  ctx: Ctx,
  id: string,
): Promise<SessionRecord | null> {
  if (!isSessionId(id)) return null;
  const consoleId = requireSession(ctx).id;
  const tenant = await trySessionTenant(ctx.deps, consoleId, id);
  if (tenant === null) return null;
  const rec = await readSession(ctx.deps, id);
  return rec && rec.tenant_id === tenant ? rec : null;
}

async function start(ctx: Ctx, form: URLSearchParams): Promise<Response> {
  const { input, body, errors, forbidden } = readTryForm(
    form,
    requireAdmin(ctx),
  );
  const { engineConfigured, sfuConfigured } = await formData(ctx);
  const base = { input, engineConfigured, sfuConfigured };
  if (!body) return show(ctx, { ...base, errors }, forbidden ? 403 : 400);
  let sessionId: string;
  try {
    const { response } = await createSession(ctx.deps, {
      tenantId: input.tenant,
      body,
    });
    sessionId = response.session_id;
  } catch (err) {
    if (!(err instanceof ApiError) || err.code === "AVTR_INTERNAL_ERROR") {
      throw err;
    }
    const { field, message } = placeApiError(err);
    return show(ctx, { ...base, errors: { [field]: message } }, err.status);
  }
  await rememberTrySession(
    ctx.deps,
    requireSession(ctx).id,
    sessionId,
    input.tenant,
  );
  return redirect(`${PATH}?session=${encodeURIComponent(sessionId)}`);
}

async function end(ctx: Ctx, form: URLSearchParams): Promise<Response> {
  const rec = await ownSession(ctx, form.get("session_id") ?? "");
  if (!rec) {
    return show(
      ctx,
      await formData(ctx, {
        errors: {
          form: "That session was not started from this console session.",
        },
      }),
      404,
    );
  }
  try {
    await endSession(ctx.deps, rec.tenant_id, rec.session_id, {
      force: false,
    });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 409) throw err;
    const now = await readSession(ctx.deps, rec.session_id) ?? rec;
    return show(
      ctx,
      await formData(ctx, {
        session: now,
        errors: {
          form:
            `${err.message}. Only active sessions can be ended (${err.code}).`,
        },
      }),
      409,
    );
  }
  return redirect(`${PATH}?session=${encodeURIComponent(rec.session_id)}`);
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const id = ctx.url.searchParams.get("session");
    if (id === null) return show(ctx, await formData(ctx));
    const rec = await ownSession(ctx, id);
    if (!rec) {
      return show(
        ctx,
        await formData(ctx, {
          errors: {
            form:
              "That session was not started from this console session (or is gone). Start a new one.",
          },
        }),
        404,
      );
    }
    return show(
      ctx,
      await formData(ctx, {
        session: rec,
        notice: isLive(rec.status) ? undefined : `Session ${rec.status}.`,
        iceServers: rec.transport === "webrtc_sfu"
          ? iceServersFor(ctx.deps.config, rec.session_id, ctx.deps.now())
          : [],
      }),
    );
  },

  POST(ctx: Ctx): Promise<Response> {
    const form = consoleState(ctx).form;
    return form.get("action") === "end" ? end(ctx, form) : start(ctx, form);
  },
};

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

function StartForm(
  props: { data: TryData; csrf: string; fixedTenant: boolean },
) {
  const { input, errors } = props.data;
  return (
    <form
      method="post"
      action={PATH}
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

function Talk(
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
          tokenUrl: `${PATH}/token`,
          workletUrl: WORKLET_URL,
          transport: s.transport,
          iceServers: props.iceServers,
        }}
      />
      <form method="post" action={PATH} class="row try-end">
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

export default function TryPage(
  { data, csrf, admin }: PageProps<TryData>,
) {
  const s = data.session;
  const talking = s !== undefined && isLive(s.status);
  return (
    <>
      <link rel="stylesheet" href="/static/try.css" />
      <PageHeader
        title="Try it"
        lead="Start a session against a conversation engine and talk to the avatar here, with the microphone or typed text."
        actions={talking
          ? <a href={PATH} class="btn btn-quiet">New session</a>
          : undefined}
      />
      {data.notice && s && (
        <Notice kind="success">
          <p>
            {data.notice} <StatusBadge status={s.status} />{" "}
            <a href={sessionHref(s.session_id)}>Session details</a>
          </p>
        </Notice>
      )}
      {talking
        ? (
          <>
            {data.errors.form && (
              <Notice kind="error">{data.errors.form}</Notice>
            )}
            <Talk s={s} csrf={csrf} iceServers={data.iceServers ?? []} />
          </>
        )
        : (
          <StartForm
            data={data}
            csrf={csrf}
            fixedTenant={admin !== null && !isOperator(admin)}
          />
        )}
    </>
  );
}
