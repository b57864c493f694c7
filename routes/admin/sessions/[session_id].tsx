/**
 * One session: its state timeline, segments rendered, warning, and the End and Force end
 * actions. Ending calls the same lib function as POST /v1/sessions/{id}/end (with the
 * session's own tenant), so the rules (only `active` ends, 409s) are the API's. Another
 * tenant's session is "not found" to a tenant administrator. The operator also sees which
 * instance holds the session; a tenant administrator sees no infrastructure. Both see
 * what the viewer's browser client last reported (`client.stats`, kept in KV briefly).
 */
import {
  ConfirmAction,
  ConfirmForm,
} from "../../../components/ConfirmAction.tsx";
import { InstanceHolder } from "../../../components/Instances.tsx";
import {
  Csrf,
  Notice,
  PageHeader,
  StatusBadge,
  Time,
} from "../../../components/ui.tsx";
import {
  formatDuration,
  isLive,
  sessionDuration,
  sessionHref,
  viewerStatsText,
} from "../../../lib/console/format.ts";
import { redirect } from "../../../lib/console/http.ts";
import { readAdministeredSession, toRow } from "../../../lib/console/live.ts";
import {
  consoleState,
  errorPage,
  page,
  type PageProps,
  requireAdmin,
} from "../../../lib/console/render.tsx";
import { ApiError } from "../../../lib/errors.ts";
import {
  type MountpointRecord,
  readMountpointRecord,
} from "../../../lib/sfu/mod.ts";
import type { Ctx } from "../../../lib/api/http.ts";
import {
  readViewerStats,
  type ViewerReport,
} from "../../../lib/media/viewer_stats.ts";
import { sessionHolder } from "../../../lib/nodes/registry.ts";
import {
  endSession,
  readSession,
  type SessionRecord,
} from "../../../lib/sessions.ts";

interface DetailData {
  session: SessionRecord;
  /** A webrtc_sfu session's mountpoint record (its viewer state). */
  sfu?: MountpointRecord | null;
  /** What its viewer's browser client last reported (`client.stats`), if recently. */
  viewer?: ViewerReport | null;
  /** The instance holding it (its `owner`): the operator's only. */
  holder?: Awaited<ReturnType<typeof sessionHolder>>;
  notice?: string;
  error?: string;
  /** Set when a post lacked `confirm=yes`: the page asks before ending. */
  confirm?: "end" | "force_end";
}

/** The session of the URL, when the signed-in administrator may see it. */
function load(ctx: Ctx): Promise<SessionRecord | null> {
  return readAdministeredSession(
    ctx.deps,
    requireAdmin(ctx),
    ctx.params.session_id,
  );
}

function notFound(ctx: Ctx): Response {
  return errorPage(
    ctx,
    404,
    "Session not found",
    "There is no session with this id (terminal sessions are kept for 7 days).",
  );
}

/** What the SFU reports of a webrtc_sfu session's viewer. */
function viewerText(rec: MountpointRecord | null | undefined): string {
  if (!rec) return "no mountpoint (the session is over)";
  switch (rec.viewer) {
    case "flowing":
      return "receiving media";
    case "negotiating":
      return "negotiating";
    default:
      return "no viewer connected";
  }
}

function show(ctx: Ctx, data: DetailData, status = 200): Response {
  return page(ctx, SessionPage, data, {
    title: data.session.session_id,
    section: "sessions",
    status,
  });
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const session = await load(ctx);
    if (!session) return notFound(ctx);
    const ended = ctx.url.searchParams.get("ended");
    return show(ctx, {
      session,
      sfu: session.transport === "webrtc_sfu"
        ? await readMountpointRecord(ctx.deps, session.session_id)
        : undefined,
      holder: await sessionHolder(ctx.deps, requireAdmin(ctx), session.owner),
      viewer: await readViewerStats(ctx.deps, session.session_id),
      notice: ended ? `Session ended: ${session.status}.` : undefined,
    });
  },

  async POST(ctx: Ctx): Promise<Response> {
    const session = await load(ctx);
    if (!session) return notFound(ctx);
    const form = consoleState(ctx).form;
    const action = form.get("action");
    if (action !== "end" && action !== "force_end") {
      return show(ctx, { session, error: "Unknown action." }, 400);
    }
    if (form.get("confirm") !== "yes") {
      return show(ctx, { session, confirm: action });
    }
    try {
      await endSession(ctx.deps, session.tenant_id, session.session_id, {
        force: action === "force_end",
      });
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 409) throw err;
      const now = await readSession(ctx.deps, session.session_id) ?? session;
      return show(ctx, {
        session: now,
        error: `${err.message}. Only active sessions can be ended.`,
      }, 409);
    }
    return redirect(`${sessionHref(session.session_id)}?ended=1`);
  },
};

function Actions(props: { s: SessionRecord; csrf: string; confirm?: string }) {
  const { s, csrf } = props;
  const action = sessionHref(s.session_id);
  if (props.confirm) {
    const force = props.confirm === "force_end";
    return (
      <Notice
        kind="warning"
        title={force ? "Force end this session?" : "End this session?"}
      >
        <p>
          {force
            ? "The provider and renderer are dropped at once, without a graceful goodbye."
            : "The provider and renderer are asked to finish (up to the cleanup timeout)."}
        </p>
        <ConfirmForm
          action={action}
          csrf={csrf}
          value={props.confirm}
          label={force ? "Force end" : "End session"}
        />
      </Notice>
    );
  }
  if (s.status !== "active") {
    return (
      <p class="muted">
        {isLive(s.status)
          ? `Only active sessions can be ended; this one is ${s.status}.`
          : "This session is over."}
      </p>
    );
  }
  return (
    <form method="post" action={action} class="row">
      <Csrf token={csrf} />
      <ConfirmAction
        label="End session"
        name="action"
        value="end"
        message="End this session gracefully? The provider and renderer are asked to finish first."
        confirmLabel="End session"
      />
      <ConfirmAction
        label="Force end"
        name="action"
        value="force_end"
        message="Force end this session? The provider and renderer are dropped at once."
        confirmLabel="Force end"
        danger
      />
    </form>
  );
}

export default function SessionPage(
  { data, csrf, now }: PageProps<DetailData>,
) {
  const s = data.session;
  const row = toRow(s);
  return (
    <>
      <p class="crumbs">
        <a href="/admin/sessions">Sessions</a> /
      </p>
      <PageHeader
        title={s.session_id}
        actions={
          <a href={sessionHref(s.session_id)} class="btn btn-quiet">Refresh</a>
        }
      />
      {data.notice && <Notice kind="success">{data.notice}</Notice>}
      {data.error && <Notice kind="error">{data.error}</Notice>}
      {s.warning && (
        <Notice kind="warning" title="Ended with a warning">{s.warning}</Notice>
      )}
      <div class="split">
        <section class="grow card" aria-labelledby="facts">
          <h2 id="facts">Details</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={s.status} />
            </dd>
            <dt>Tenant</dt>
            <dd>
              <a href={`/admin/tenants/${encodeURIComponent(s.tenant_id)}`}>
                {s.tenant_id}
              </a>
            </dd>
            <dt>Provider type</dt>
            <dd>{s.provider_type}</dd>
            <dt>Transport</dt>
            <dd>{s.transport}</dd>
            {s.transport === "webrtc_sfu" && (
              <>
                <dt>SFU viewer</dt>
                <dd data-testid="sfu-viewer">
                  {viewerText(data.sfu)}
                </dd>
              </>
            )}
            <dt>Viewer</dt>
            <dd data-testid="viewer-stats">
              {data.viewer
                ? viewerStatsText(data.viewer, now)
                : <span class="muted">no report in the last 2 minutes</span>}
            </dd>
            {data.holder && (
              <>
                <dt>Instance</dt>
                <dd>
                  <InstanceHolder
                    id={data.holder.id}
                    instance={data.holder.instance}
                  />
                </dd>
              </>
            )}
            <dt>Avatar / background</dt>
            <dd>{s.avatar_id} / {s.bg_id}</dd>
            <dt>Created</dt>
            <dd>
              <Time ms={s.created_at} />
            </dd>
            <dt>Started</dt>
            <dd>
              <Time ms={s.started_at} />
            </dd>
            <dt>Ended</dt>
            <dd>
              <Time ms={s.ended_at} />
            </dd>
            <dt>End reason</dt>
            <dd data-field="end-reason">
              {row.end_reason ?? <span class="muted">—</span>}
            </dd>
            <dt>Duration active</dt>
            <dd>{formatDuration(sessionDuration(row, now))}</dd>
            <dt>Segments rendered</dt>
            <dd>{s.chunks_rendered ?? <span class="muted">—</span>}</dd>
          </dl>
          <h2>Actions</h2>
          <Actions s={s} csrf={csrf} confirm={data.confirm} />
        </section>
        <section class="side card" aria-labelledby="timeline">
          <h2 id="timeline">Timeline</h2>
          <ol class="timeline">
            {s.timeline.map((t, i) => (
              <li key={i}>
                <StatusBadge status={t.status} />
                <Time ms={t.at} />
                {i > 0 && (
                  <span class="muted">
                    +{formatDuration((t.at - s.timeline[i - 1].at) / 1000)}
                  </span>
                )}
                {i === s.timeline.length - 1 && row.end_reason && (
                  <span class="end-reason" data-field="timeline-end-reason">
                    {row.end_reason}
                  </span>
                )}
              </li>
            ))}
          </ol>
        </section>
      </div>
    </>
  );
}
