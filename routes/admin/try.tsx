/**
 * Try it: start an `external_engine` session for a chosen tenant and talk to the avatar
 * in the page. The start form posts here; the session is created with the same lib call
 * as `POST /v1/sessions` (so validation and errors are the API's, shown in place), then
 * the browser is sent to `?session=<id>`, where the TryIt island plays it. No media token
 * is rendered: the island fetches one from `/admin/try/token`. End calls `endSession`,
 * like the console's session page.
 */
import { Notice, PageHeader, StatusBadge } from "../../components/ui.tsx";
import {
  StartForm,
  Talk,
  TRY_PATH,
  type TryData,
} from "../../components/TryForms.tsx";
import { isLive, sessionHref } from "../../lib/console/format.ts";
import { redirect } from "../../lib/console/http.ts";
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
  TRY_TENANT_PATTERN,
  trySessionTenant,
} from "../../lib/console/try_it.ts";
import { listPhotoAvatars } from "../../lib/photo/mod.ts";
import { ApiError } from "../../lib/errors.ts";
import { iceServersFor } from "../../lib/sfu/mod.ts";
import { deploymentHasSfu } from "../../lib/nodes/registry.ts";
import type { Ctx } from "../../lib/api/http.ts";
import { isOperator } from "../../lib/principal.ts";
import {
  createSession,
  endSession,
  isSessionId,
  readSession,
  type SessionRecord,
} from "../../lib/sessions.ts";

const PATH = TRY_PATH;

function show(ctx: Ctx, data: TryData, status = 200): Response {
  return page(ctx, TryPage, data, { title: "Try it", section: "try", status });
}

async function formData(
  ctx: Ctx,
  extra: Partial<TryData> = {},
): Promise<TryData> {
  const admin = requireAdmin(ctx);
  const input = extra.input ?? defaultTryInput(ctx.deps, admin);
  return {
    input,
    errors: {},
    engineConfigured: ctx.deps.config.tryEngineUrl !== undefined,
    sfuConfigured: await deploymentHasSfu(ctx.deps),
    photoAvatars: TRY_TENANT_PATTERN.test(input.tenant)
      ? await listPhotoAvatars(ctx.deps.kv, admin, input.tenant)
      : [],
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
  const base = await formData(ctx, { input });
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
