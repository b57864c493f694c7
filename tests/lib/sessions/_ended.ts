/**
 * Checks of how a session ended, everywhere it shows (DECISIONS 4): the status read, the
 * terminal webhook's body (delivered to a real receiver) and the console's sessions list
 * and session page.
 */
import assert from "node:assert/strict";
import {
  type EndReason,
  sessionStatusResponseSchema,
} from "../../../lib/api/schemas.ts";
import type { TestApp } from "../../_helpers.ts";
import { type Console, get } from "../../routes/admin/_console.ts";
import type { Receiver } from "../webhooks/_helpers.ts";
import { waitUntil } from "../webhooks/_helpers.ts";
import {
  type Browser,
  type Json,
  type LiveStack,
  statusOf,
} from "../media/_live.ts";

/**
 * Asserts what the browser socket saw of the end: `session.state` `ending` (when it
 * ended from `active`) before `session.ended` with the status and `reason`.
 */
export async function expectSocketEnd(
  b: Browser,
  want: EndExpectation,
): Promise<void> {
  const ended = await b.message(
    (m) => m.type === "session.ended",
    "session.ended",
  );
  assert.deepEqual(ended, {
    type: "session.ended",
    status: want.status,
    reason: want.reason,
  });
  const ending = b.json.findIndex((m) =>
    m.type === "session.state" && m.status === "ending"
  );
  if (want.fromActive) {
    assert.ok(ending >= 0, "session.state ending was sent");
    assert.ok(ending < b.json.indexOf(ended), "ending before session.ended");
  }
}

export interface EndExpectation {
  status: "ended" | "ended_with_warnings" | "failed";
  reason: EndReason;
  /** It ended from `active`: `duration_s` and `chunks_rendered` are present. */
  fromActive: boolean;
}

/** Waits until `id` is terminal and returns its status body. */
export async function terminalStatus(
  s: Pick<LiveStack, "t">,
  id: string,
): Promise<Json> {
  return await waitUntil(async () => {
    const st = await statusOf(s as LiveStack, id);
    return ["ended", "ended_with_warnings", "failed"].includes(
        String(st.status),
      )
      ? st
      : undefined;
  }, `${id} terminal`);
}

/** The terminal webhook body of `id` once the receiver has it. */
export async function terminalWebhook(rx: Receiver, id: string): Promise<Json> {
  return await waitUntil(
    () =>
      rx.received.map((r) => JSON.parse(r.body) as Json).find((b) => {
        const data = b.data as Json;
        return data.session_id === id &&
          (b.type === "session.ended" || b.type === "session.failed");
      }),
    `terminal webhook of ${id}`,
  );
}

/** The console's end-reason cell of `id`'s row on the sessions list. */
function listReason(html: string, id: string): string | undefined {
  const row = html.match(
    new RegExp(`<tr data-session-id="${id}"[^>]*>([\\s\\S]*?)</tr>`),
  );
  assert.ok(row, `no row for ${id} on the sessions list`);
  return row[1].match(/data-field="end-reason">([a-z_]+)</)?.[1];
}

/**
 * Asserts how `id` ended in the status read, the webhook body and the console; returns
 * the status body.
 */
export async function expectEnded(
  t: TestApp,
  rx: Receiver,
  c: Console,
  id: string,
  want: EndExpectation,
): Promise<Json> {
  const st = await terminalStatus({ t }, id);
  sessionStatusResponseSchema.parse(st);
  assert.equal(st.status, want.status, JSON.stringify(st));
  assert.equal(st.end_reason, want.reason, JSON.stringify(st));
  assert.equal(
    typeof st.warning === "string",
    want.status === "ended_with_warnings",
    "warning exactly when ended_with_warnings",
  );
  if (want.fromActive) {
    assert.equal(typeof st.duration_s, "number");
    assert.equal(typeof st.chunks_rendered, "number");
  } else {
    assert.equal(st.duration_s, undefined);
    assert.equal(st.chunks_rendered, undefined);
  }

  const hook = await terminalWebhook(rx, id);
  const data = hook.data as Json;
  assert.equal(
    hook.type,
    want.status === "failed" ? "session.failed" : "session.ended",
  );
  assert.equal(data.status, want.status);
  assert.equal(data.end_reason, want.reason);
  assert.equal(data.duration_s, st.duration_s);

  const list = await (await get(t, c, "/admin/sessions")).text();
  assert.equal(listReason(list, id), want.reason, "the list's column");
  const page = await (await get(
    t,
    c,
    `/admin/sessions/${encodeURIComponent(id)}`,
  )).text();
  assert.match(
    page,
    new RegExp(`data-field="timeline-end-reason">${want.reason}<`),
    "the session page's timeline",
  );
  return st;
}
