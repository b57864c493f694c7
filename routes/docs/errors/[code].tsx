/**
 * `GET /docs/errors/{code}`: the page behind every `doc_url`, rendered from the error
 * table. An unknown code gets a 404 page.
 */
import { ERROR_CODES, type ErrorCode } from "../../../lib/errors.ts";
import type { Ctx } from "../../../lib/api/http.ts";
import {
  API_OPERATIONS,
  operationErrors,
} from "../../../lib/api/operations.ts";
import { DocsLayout, docsResponse } from "../index.tsx";

/** Renders the table's doc text, where `backticks` mark code. */
function DocText(props: { text: string }) {
  return (
    <p>
      {props.text.split("`").map((part, i) =>
        i % 2 === 1 ? <code key={i}>{part}</code> : part
      )}
    </p>
  );
}

function ErrorPage(props: { code: ErrorCode }) {
  const info = ERROR_CODES[props.code];
  const ops = API_OPERATIONS.filter((op) =>
    !op.aliasOf && operationErrors(op).includes(props.code)
  );
  return (
    <DocsLayout title={props.code}>
      <p>
        <a href="/docs#errors">← All error codes</a>
      </p>
      <h1>
        <code>{props.code}</code>
      </h1>
      <p class="lead">{info.title}</p>
      <dl class="facts">
        <dt>HTTP status</dt>
        <dd>{info.status}</dd>
        <dt>Retryable</dt>
        <dd>
          {info.retryable
            ? (
              <>
                yes — the body carries <code>retry_after</code> (seconds)
              </>
            )
            : (
              <>
                no — the body has no <code>retry_after</code>
              </>
            )}
        </dd>
      </dl>
      <h2>What it means</h2>
      <DocText text={info.doc} />
      {ops.length > 0 && (
        <>
          <h2>Answered by</h2>
          <ul>
            {ops.map((op) => (
              <li key={op.operationId}>
                <a href={`/docs#${op.operationId}`}>
                  <code>{op.method.toUpperCase()} {op.path}</code>
                </a>
              </li>
            ))}
          </ul>
        </>
      )}
    </DocsLayout>
  );
}

function NotFoundPage(props: { code: string }) {
  return (
    <DocsLayout title="Unknown error code">
      <h1>Unknown error code</h1>
      <p>
        <code>{props.code}</code> is not an error code of this API. See{" "}
        <a href="/docs#errors">the list of error codes</a>.
      </p>
    </DocsLayout>
  );
}

export const handler = {
  GET(ctx: Ctx): Response {
    const code = ctx.params.code;
    if (!Object.hasOwn(ERROR_CODES, code)) {
      return docsResponse(<NotFoundPage code={code} />, 404);
    }
    return docsResponse(<ErrorPage code={code as ErrorCode} />);
  },
};
