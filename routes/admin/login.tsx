/**
 * Sign-in: an API key holding `keys:admin` (or ADMIN_API_KEY) starts a console session.
 * The form carries a double-submit CSRF token (cookie + field); failed attempts are
 * limited per client address (lib/console/login_limit.ts). The key is never echoed back.
 */
import { FieldError, Notice } from "../../components/ui.tsx";
import {
  cookie,
  isSecure,
  LOGIN_CSRF_COOKIE,
  readCookie,
  redirect,
  safeNext,
  sessionCookie,
  tokensEqual,
} from "../../lib/console/http.ts";
import { reserveLoginAttempt } from "../../lib/console/login_limit.ts";
import {
  consoleState,
  page,
  type PageProps,
} from "../../lib/console/render.tsx";
import {
  checkCredential,
  CONSOLE_SESSION_TTL_MS,
  createConsoleSession,
  deleteConsoleSession,
} from "../../lib/console/session.ts";
import type { Ctx } from "../../lib/api/http.ts";
import { randomToken } from "../../lib/ids.ts";

interface LoginData {
  token: string;
  next: string;
  error?: string;
  info?: string;
}

const FAILURE_TEXT = {
  invalid: "That API key is not valid, or it has been revoked.",
  expired: "That API key has expired.",
  scope:
    "That API key is valid but lacks the keys:admin scope the console needs.",
} as const;

function render(
  ctx: Ctx,
  data: Omit<LoginData, "token">,
  status = 200,
  extraHeaders: Record<string, string> = {},
): Response {
  const token = randomToken(24);
  const headers = new Headers(extraHeaders);
  headers.append(
    "set-cookie",
    cookie(LOGIN_CSRF_COOKIE, token, {
      path: "/admin/login",
      maxAgeS: 3600,
      secure: isSecure(ctx),
    }),
  );
  return page(ctx, LoginPage, { ...data, token }, {
    title: "Sign in",
    section: "login",
    status,
    headers,
  });
}

export const handler = {
  GET(ctx: Ctx): Response {
    const next = safeNext(ctx.url.searchParams.get("next"));
    if (consoleState(ctx).session) return redirect(next);
    const info = ctx.url.searchParams.has("signed_out")
      ? "You are signed out."
      : undefined;
    return render(ctx, { next, info });
  },

  async POST(ctx: Ctx): Promise<Response> {
    const form = consoleState(ctx).form;
    const next = safeNext(form.get("next"));
    const cookieToken = readCookie(ctx.req, LOGIN_CSRF_COOKIE) ?? "";
    if (!tokensEqual(form.get("_csrf") ?? "", cookieToken)) {
      return render(ctx, {
        next,
        error:
          "The sign-in form expired or was not sent from this page. Please try again.",
      }, 403);
    }
    const credential = (form.get("api_key") ?? "").trim();
    if (credential === "") {
      return render(ctx, { next, error: "Enter an API key." }, 400);
    }
    const attempt = await reserveLoginAttempt(ctx.deps, ctx.remoteAddr);
    if (!attempt.ok) {
      const wait = attempt.retryAfterS;
      return render(
        ctx,
        {
          next,
          error: `Too many failed sign-ins from your address. Try again in ${
            Math.ceil(wait / 60)
          } minute${wait > 60 ? "s" : ""}.`,
        },
        429,
        { "retry-after": String(wait) },
      );
    }
    let result;
    try {
      result = await checkCredential(ctx.deps, credential);
    } catch (err) {
      // The store failed, not the credential: the attempt does not count.
      await attempt.release().catch(() => {});
      throw err;
    }
    if (!result.ok) {
      ctx.deps.log.warn("console sign-in refused", {
        reason: result.reason,
        client: ctx.remoteAddr,
      });
      return render(ctx, { next, error: FAILURE_TEXT[result.reason] }, 401);
    }
    await attempt.release();
    const old = consoleState(ctx).session;
    if (old) await deleteConsoleSession(ctx.deps, old.id);
    const session = await createConsoleSession(ctx.deps, result.principal);
    ctx.deps.log.info("console sign-in", {
      kind: session.record.kind,
      key_id: session.record.key_id,
      tenant: session.record.tenant_id,
    });
    const headers = new Headers();
    headers.append(
      "set-cookie",
      sessionCookie(ctx, session.id, CONSOLE_SESSION_TTL_MS),
    );
    headers.append(
      "set-cookie",
      cookie(LOGIN_CSRF_COOKIE, "", {
        path: "/admin/login",
        maxAgeS: 0,
        secure: isSecure(ctx),
      }),
    );
    return redirect(next, headers);
  },
};

export default function LoginPage({ data }: PageProps<LoginData>) {
  return (
    <section class="login">
      <h1>Sign in to the console</h1>
      <p class="lead">
        Use an API key with the <code>keys:admin</code> scope, or the operator's
        {" "}
        <code>ADMIN_API_KEY</code>.
      </p>
      {data.info && <Notice kind="info">{data.info}</Notice>}
      <form method="post" action="/admin/login" class="card form">
        <input type="hidden" name="_csrf" value={data.token} />
        <input type="hidden" name="next" value={data.next} />
        <div class="field">
          <label for="api_key">API key</label>
          <input
            id="api_key"
            name="api_key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            autofocus
            aria-invalid={data.error ? "true" : undefined}
            aria-describedby={data.error ? "api_key-error" : "api_key-help"}
          />
          <FieldError id="api_key-error" message={data.error} />
          {!data.error && (
            <p id="api_key-help" class="help">
              The key is checked, then forgotten: the console keeps only its id.
            </p>
          )}
        </div>
        <button type="submit" class="btn btn-primary">Sign in</button>
      </form>
    </section>
  );
}
