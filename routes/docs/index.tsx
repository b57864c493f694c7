/**
 * `GET /docs`: the API reference — the six paths, authentication, errors and rate
 * limits — server-rendered, no scripts. Exports the docs layout the error pages share.
 */
import { type ComponentChildren, Fragment, type VNode } from "preact";
import { renderToString } from "preact-render-to-string";
import { createHash } from "node:crypto";
import { ERROR_CODES, type ErrorCode } from "../../lib/errors.ts";
import type { Ctx } from "../../lib/api/http.ts";
import {
  API_OPERATIONS,
  type ApiOperation,
  COMMON_ERRORS,
} from "../../lib/api/operations.ts";

const STYLE = `
:root{color-scheme:light dark;--fg:#1c1e21;--muted:#5b6270;--bg:#fff;--line:#d9dde3;--code:#f3f5f8;--accent:#2456c9;--warn:#9a5b00}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--muted:#a0a7b4;--bg:#15171a;--line:#30353c;--code:#1f2328;--accent:#7aa5ff;--warn:#f0b35a}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif}
header,main,footer{max-width:60rem;margin:0 auto;padding:0 1.25rem}
header{display:flex;gap:1.5rem;align-items:baseline;border-bottom:1px solid var(--line);padding-top:1rem;padding-bottom:.75rem}
header a{color:var(--fg);text-decoration:none;font-weight:600}
header nav a{font-weight:400;color:var(--muted);margin-right:1rem}
a{color:var(--accent)}
h1{font-size:1.8rem;margin:1.5rem 0 .5rem}
h2{font-size:1.3rem;margin:2.25rem 0 .5rem;padding-top:.5rem;border-top:1px solid var(--line)}
h3{font-size:1.05rem;margin:1.5rem 0 .25rem}
code{font:.9em ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--code);padding:.1em .3em;border-radius:3px}
pre{background:var(--code);padding:.75rem 1rem;border-radius:6px;overflow-x:auto}
pre code{padding:0;background:none}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem;font-size:.95rem}
th,td{text-align:left;vertical-align:top;padding:.4rem .6rem;border-bottom:1px solid var(--line)}
th{font-weight:600;color:var(--muted)}
.method{font:600 .8rem ui-monospace,monospace;padding:.15em .45em;border-radius:3px;border:1px solid var(--line)}
.deprecated{color:var(--warn)}
.lead{color:var(--muted);font-size:1.05rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0}
footer{color:var(--muted);font-size:.9rem;border-top:1px solid var(--line);margin-top:3rem;padding-top:1rem;padding-bottom:2rem}
`;

/** CSP of the docs: no scripts, no inline styles but the one stylesheet above. */
export const DOCS_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`,
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The layout every docs page shares. */
export function DocsLayout(
  props: { title: string; children: ComponentChildren },
) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · Live Avatar API`}</title>
        <style dangerouslySetInnerHTML={{ __html: STYLE }} />
      </head>
      <body>
        <header>
          <a href="/docs">Live Avatar API</a>
          <nav aria-label="Docs">
            <a href="/docs#endpoints">Endpoints</a>
            <a href="/docs#errors">Errors</a>
            <a href="/openapi.json">OpenAPI</a>
          </nav>
        </header>
        <main>{props.children}</main>
        <footer>
          Generated from the service's own schemas and error table.
        </footer>
      </body>
    </html>
  );
}

/** A complete HTML response for a docs page. */
export function docsResponse(page: VNode, status = 200): Response {
  return new Response("<!DOCTYPE html>" + renderToString(page), {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": DOCS_CSP,
      "cache-control": "public, max-age=300",
    },
  });
}

function CodeLink(props: { code: ErrorCode }) {
  return (
    <a href={`/docs/errors/${props.code}`}>
      <code>{props.code}</code>
    </a>
  );
}

function Operation(props: { op: ApiOperation }) {
  const { op } = props;
  const canonical = op.aliasOf
    ? API_OPERATIONS.find((o) => o.operationId === op.aliasOf)
    : undefined;
  return (
    <section id={op.operationId}>
      <h3>
        <span class="method">{op.method.toUpperCase()}</span>{" "}
        <code>{op.path}</code> — {op.summary}
      </h3>
      {canonical && (
        <p class="deprecated">
          Deprecated alias of{" "}
          <code>{canonical.method.toUpperCase()} {canonical.path}</code>;
          answers with <code>Deprecation: true</code> and a <code>Link</code>
          {" "}
          to it.
        </p>
      )}
      <p>{op.description}</p>
      <dl class="facts">
        <dt>Scope</dt>
        <dd>
          <code>{op.scope}</code>
        </dd>
        {op.request && (
          <>
            <dt>Body</dt>
            <dd>
              <code>{op.request.name}</code> (JSON)
            </dd>
          </>
        )}
        <dt>Success</dt>
        <dd>
          {op.success.status}
          {op.success.name
            ? (
              <>
                {" "}
                <code>{op.success.name}</code>
              </>
            )
            : null}
        </dd>
        <dt>Errors</dt>
        <dd>
          {op.errors.map((c, i) => (
            <Fragment key={c}>
              {i > 0 && ", "}
              <CodeLink code={c} />
            </Fragment>
          ))}
          {op.errors.length > 0 ? ", " : ""}and the common errors below
        </dd>
      </dl>
    </section>
  );
}

function ReferencePage() {
  const canonical = API_OPERATIONS.filter((o) => !o.aliasOf);
  const aliases = API_OPERATIONS.filter((o) => o.aliasOf);
  const codes = Object.keys(ERROR_CODES) as ErrorCode[];
  return (
    <DocsLayout title="API reference">
      <h1>API reference</h1>
      <p class="lead">
        A REST control plane under <code>/v1/</code>{" "}
        to create live avatar sessions, read their status, end them and mint
        media tokens, plus API-key administration. The machine-readable contract
        is <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).
      </p>

      <h2 id="endpoints">Endpoints</h2>
      <table>
        <thead>
          <tr>
            <th>Method</th>
            <th>Path</th>
            <th>Purpose</th>
            <th>Scope</th>
          </tr>
        </thead>
        <tbody>
          {canonical.map((op) => (
            <tr key={op.operationId}>
              <td>
                <span class="method">{op.method.toUpperCase()}</span>
              </td>
              <td>
                <a href={`#${op.operationId}`}>
                  <code>{op.path}</code>
                </a>
              </td>
              <td>{op.summary}</td>
              <td>
                <code>{op.scope}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {canonical.map((op) => <Operation key={op.operationId} op={op} />)}
      <h3>Deprecated aliases</h3>
      <p>
        Internal bridges, not part of the contract. New integrations use the
        canonical paths.
      </p>
      {aliases.map((op) => <Operation key={op.operationId} op={op} />)}

      <h3 id="media-socket">Media socket</h3>
      <p>
        The browser connects{" "}
        <code>{"{ws_base_url}/v1/sessions/{session_id}/ws?token=…"}</code>{" "}
        with the <code>client_token</code> (or{" "}
        <code>stream_metadata.session_token</code>). A missing, invalid or
        expired token is refused with HTTP 401 before the socket opens.
      </p>

      <h2 id="authentication">Authentication</h2>
      <p>
        Every <code>/v1/</code> call carries an API key as{" "}
        <code>Authorization: Bearer &lt;api_key&gt;</code> or{" "}
        <code>x-api-key: &lt;api_key&gt;</code>. Keys carry scopes:{" "}
        <code>sessions:write</code> (create, end, client-token),{" "}
        <code>sessions:read</code> (status) and <code>keys:admin</code>{" "}
        (API keys). No credential → 401{" "}
        <CodeLink code="AVTR_AUTH_MISSING_CREDENTIALS" />; unknown or revoked →
        401 <CodeLink code="AVTR_AUTH_INVALID_KEY" />; expired → 401{" "}
        <CodeLink code="AVTR_AUTH_EXPIRED_TOKEN" />; a missing scope → 403{" "}
        <CodeLink code="AVTR_AUTH_MISSING_SCOPE" />. Sessions belong to the
        tenant that created them; another tenant's session answers 404{" "}
        <CodeLink code="AVTR_SESSION_NOT_FOUND" />, like a missing one.
      </p>

      <h2 id="errors">Errors</h2>
      <p>
        Every 4xx and 5xx answer is a flat JSON object. Match on{" "}
        <code>code</code>, never on <code>message</code>.
      </p>
      <pre><code>{`{
  "code": "AVTR_SESSION_NOT_FOUND",
  "message": "Session not found",
  "request_id": "01J…",
  "doc_url": "…/errors/AVTR_SESSION_NOT_FOUND"
}`}</code></pre>
      <p>
        <code>request_id</code> echoes the <code>X-Request-Id</code>{" "}
        response header (send your own, 1–128 characters of{" "}
        <code>[A-Za-z0-9_-]</code>, or one is generated).{" "}
        <code>retry_after</code>{" "}
        (seconds, 1–3600) is present exactly on retryable codes;{" "}
        <code>param</code>{" "}
        names the field of a 400 about one field. Do not blind-retry a 409:
        re-read the status. Every authenticated operation can also answer{" "}
        {COMMON_ERRORS.map((c, i) => (
          <Fragment key={c}>
            {i > 0 && ", "}
            <CodeLink code={c} />
          </Fragment>
        ))}.
      </p>
      <table>
        <thead>
          <tr>
            <th>Code</th>
            <th>Status</th>
            <th>Retryable</th>
            <th>Meaning</th>
          </tr>
        </thead>
        <tbody>
          {codes.map((c) => (
            <tr key={c}>
              <td>
                <CodeLink code={c} />
              </td>
              <td>{ERROR_CODES[c].status}</td>
              <td>{ERROR_CODES[c].retryable ? "yes" : "no"}</td>
              <td>{ERROR_CODES[c].title}</td>
            </tr>
          ))}
        </tbody>
      </table>

      <h2 id="rate-limits">Rate limits</h2>
      <p>
        Requests are counted per credential (per client address when none is
        sent) in fixed 60-second windows shared by every instance. Every{" "}
        <code>/v1/</code> response, errors included, carries:
      </p>
      <table>
        <tbody>
          <tr>
            <td>
              <code>X-RateLimit-Limit</code>
            </td>
            <td>requests allowed in the window</td>
          </tr>
          <tr>
            <td>
              <code>X-RateLimit-Remaining</code>
            </td>
            <td>requests left in the window</td>
          </tr>
          <tr>
            <td>
              <code>X-RateLimit-Reset</code>
            </td>
            <td>Unix epoch seconds when the window ends</td>
          </tr>
        </tbody>
      </table>
      <p>
        Over the limit the answer is 429{" "}
        <CodeLink code="AVTR_RATE_LIMIT_EXCEEDED" /> with{" "}
        <code>Retry-After</code>{" "}
        (seconds to the window's end) equal to the body's{" "}
        <code>retry_after</code>. Honour it and add jitter. Too many live
        sessions answers 429{" "}
        <CodeLink code="AVTR_RATE_LIMIT_CONCURRENT_SESSIONS" />.
      </p>
    </DocsLayout>
  );
}

export const handler = {
  GET(_ctx: Ctx): Response {
    return docsResponse(<ReferencePage />);
  },
};
