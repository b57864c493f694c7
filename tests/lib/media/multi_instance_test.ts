import assert from "node:assert/strict";
import { startEcepFake } from "../../fakes/ecep_engine_fake.ts";
import { TEST_ADMIN_KEY } from "../../_helpers.ts";
import { Browser, connectActive, ENGINE_KEY, type LiveStack } from "./_live.ts";
import { startInstance } from "./_instance.ts";

/** Pids of live processes named `name` whose parent is `ppid`. */
async function childrenNamed(ppid: number, name: string): Promise<number[]> {
  const out: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const stat = await Deno.readTextFile(`/proc/${e.name}/stat`).catch(() =>
      ""
    );
    const m = stat.match(/^\d+ \((.*)\) (\S) (\d+)/);
    if (m && m[1].includes(name) && Number(m[3]) === ppid && m[2] !== "Z") {
      out.push(Number(e.name));
    }
  }
  return out;
}

/** The pids of `pids` that still run (zombies count as gone). */
async function alive(pids: number[]): Promise<number[]> {
  const out: number[] = [];
  for (const pid of pids) {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => "");
    if (stat && !/^\d+ \(.*\) Z/.test(stat)) out.push(pid);
  }
  return out;
}

const auth = {
  authorization: `Bearer ${TEST_ADMIN_KEY}`,
  "content-type": "application/json",
};

async function api(base: string, path: string, method = "GET", body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: auth,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("two service processes on one KV file: an end taken by B tears down A's live session", async (t) => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const engine = startEcepFake({ key: ENGINE_KEY });
  const a = await startInstance(kvPath);
  const b = await startInstance(kvPath);
  const sessions: Browser[] = [];
  let orphans: number[] = [];
  try {
    const create = async () => {
      const r = await api(a.base, "/v1/sessions", "POST", {
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: engine.url,
            auth_headers: { "x-engine-key": ENGINE_KEY },
          },
        },
      });
      assert.equal(r.status, 200);
      const browser = await connectActive(
        a,
        r.body.session_id,
        r.body.client_token,
      );
      sessions.push(browser);
      return { id: r.body.session_id as string, browser };
    };

    await t.step(
      "B reads A's session and ends it; A's socket gets session.ended",
      async () => {
        const { id, browser } = await create();
        const st = await api(b.base, `/v1/sessions/${id}`);
        assert.equal(st.body.status, "active");
        const r = await api(b.base, `/v1/sessions/${id}/end`, "POST");
        assert.equal(r.status, 200);
        assert.equal(r.body.status, "ended");
        assert.ok(
          r.body.chunks_rendered >= 1,
          "the holder reported its segments",
        );
        const ended = await browser.message(
          (m) => m.type === "session.ended",
          "session.ended",
        );
        assert.deepEqual(ended, {
          type: "session.ended",
          status: "ended",
          reason: "requested",
        });
        // The holder told its socket about the end under way taken on B.
        assert.ok(
          browser.json.some((m) =>
            m.type === "session.state" && m.status === "ending"
          ),
        );
        assert.equal(await browser.closed(), 1000);
      },
    );

    await t.step(
      "two concurrent ends on A and B: exactly one 200 and one 409",
      async () => {
        const { id } = await create();
        const results = await Promise.all([
          api(a.base, `/v1/sessions/${id}/end`, "POST"),
          api(b.base, `/v1/sessions/${id}/end`, "POST"),
        ]);
        assert.deepEqual(
          results.map((r) => r.status).sort(),
          [200, 409],
          JSON.stringify(results),
        );
      },
    );

    await t.step(
      "a media socket that reaches B is relayed to A, the holder",
      async () => {
        const r = await api(a.base, "/v1/sessions", "POST", {
          provider_type: "external_engine",
          provider_config: {
            external_engine: {
              url: engine.url,
              auth_headers: { "x-engine-key": ENGINE_KEY },
            },
          },
        });
        const id = r.body.session_id as string;
        const browser = await connectActive(b, id, r.body.client_token);
        sessions.push(browser);
        await browser.until(
          () => browser.binary.length >= 3,
          "init + segments through B",
        );
        browser.send({ type: "text", text: "through the relay" });
        const said = await browser.message(
          (m) => m.type === "transcript" && m.role === "avatar",
          "the avatar's answer through B",
        );
        assert.equal(said.text, "you said through the relay");
        const end = await api(b.base, `/v1/sessions/${id}/end`, "POST");
        assert.equal(end.status, 200);
        assert.equal(end.body.status, "ended");
        await browser.message(
          (m) => m.type === "session.ended",
          "session.ended through B",
        );
        assert.equal(await browser.closed(), 1000);
      },
    );

    await t.step(
      "the holder dies: B's end answers ended_with_warnings saying so",
      async () => {
        const { id } = await create();
        const other = await create();
        orphans = await childrenNamed(a.child.pid, "ffmpeg");
        assert.ok(
          orphans.length >= 1,
          "A runs an encoder for the live session",
        );
        await a.stop("SIGKILL");
        const r = await api(b.base, `/v1/sessions/${id}/end`, "POST");
        assert.equal(r.status, 200);
        assert.equal(r.body.status, "ended_with_warnings");
        assert.match(r.body.warning, /did not answer within 2 s/);
        // A socket for a session whose holder died cannot be relayed: invalid_session.
        const token = await api(
          b.base,
          `/v1/sessions/${other.id}/client-token`,
          "POST",
        );
        const late = Browser.connect(
          { base: b.base } as LiveStack,
          other.id,
          token.body.client_token,
        );
        sessions.push(late);
        const err = await late.message(
          (m) => m.type === "error",
          "fatal error",
        );
        assert.deepEqual(err, {
          type: "error",
          code: "invalid_session",
          fatal: true,
        });
        assert.equal(await late.closed(), 4001);
      },
    );

    await t.step(
      "the dead holder's encoders exit on their own (no orphans)",
      async () => {
        for (let i = 0; i < 100 && (await alive(orphans)).length > 0; i++) {
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.deepEqual(await alive(orphans), []);
      },
    );
  } finally {
    for (const s of sessions) s.close();
    await a.stop();
    await b.stop();
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
});
