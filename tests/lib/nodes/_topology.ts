/**
 * The hosting topology in one test process: a control plane (`SERVICE_ROLE=control`)
 * and media nodes (`SERVICE_ROLE=media`), each the real app served on its own loopback
 * port, all on one KV store, with a fake ECEP engine on wss.
 */
import { type App, createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { announceInstance } from "../../../lib/media/presence.ts";
import { TEST_ADMIN_KEY, TEST_TOKEN_SECRET } from "../../_helpers.ts";
import { startEcepFake } from "../../fakes/ecep_engine_fake.ts";
import type { FakeWs } from "../../fakes/fake_ws.ts";
import { ENGINE_KEY } from "../media/_live.ts";

export const NODE_SECRET = "node-secret-0123456789abcdefghijklmnopq";

export interface Served {
  app: App;
  log: ReturnType<typeof memoryLogger>;
  base: string;
  server: Deno.HttpServer<Deno.NetAddr>;
}

export interface Topology {
  control: Served;
  nodes: Served[];
  kv: Deno.Kv;
  engine: FakeWs;
  /** Creates a session through the control plane; resolves with the raw response. */
  create(
    body?: Record<string, unknown>,
    headers?: HeadersInit,
  ): Promise<Response>;
  /** The instance that owns `sessionId`, from its KV record. */
  ownerOf(sessionId: string): Promise<Served | undefined>;
  close(): Promise<void>;
}

async function serveApp(
  kv: Deno.Kv,
  env: Record<string, string>,
): Promise<Served> {
  const log = memoryLogger();
  const app = await createApp({
    kv,
    log,
    env: {
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      NODE_SECRET,
      ALLOW_PRIVATE_NETWORK_TARGETS: "true",
      ...env,
    },
  });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    app.handler,
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  app.deps.instanceUrl = base;
  await announceInstance(app.deps);
  return { app, log, base, server };
}

/** A control plane and one media node per entry of `nodes` (each entry: its env). */
export async function startTopology(
  nodes: Record<string, string>[],
): Promise<Topology> {
  const kv = await Deno.openKv(":memory:");
  const engine = startEcepFake({ key: ENGINE_KEY });
  const control = await serveApp(kv, { SERVICE_ROLE: "control" });
  const media: Served[] = [];
  for (const env of nodes) {
    media.push(await serveApp(kv, { SERVICE_ROLE: "media", ...env }));
  }
  const all = [control, ...media];
  return {
    control,
    nodes: media,
    kv,
    engine,
    create: (body, headers = {}) =>
      fetch(`${control.base}/v1/sessions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_ADMIN_KEY}`,
          "content-type": "application/json",
          ...headers,
        },
        body: JSON.stringify(body ?? engineBody(engine)),
      }),
    async ownerOf(sessionId) {
      const rec = await kv.get<{ owner: string }>(["sessions", sessionId]);
      return all.find((s) => s.app.deps.instanceId === rec.value?.owner);
    },
    async close() {
      for (const s of all) {
        await s.app.close();
        await s.server.shutdown();
      }
      await engine.close();
      kv.close();
    },
  };
}

/** An `external_engine` create body for the fake engine. */
export function engineBody(
  engine: FakeWs,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    provider_type: "external_engine",
    provider_config: {
      external_engine: {
        url: engine.url,
        auth_headers: { "x-engine-key": ENGINE_KEY },
      },
    },
    ...extra,
  };
}
