/**
 * The hosting topology for the fuzzers (issue 22): a control plane and a media node,
 * each `main.ts` in its own process on one KV file, the node optionally with a real
 * Janus. The fuzzers talk to the control plane as browsers and clients do (so every
 * media socket goes through its relay) and to the node's handoff endpoint as an
 * attacker on its network would. Either process dying counts; the node restarts at
 * the same URL (a new instance id, its predecessor's record still fresh).
 */
import { type RunningJanus, startJanus } from "../lib/sfu/launch.ts";
import { type ServiceUnderTest, startService } from "./_lib.ts";

/** The secret the control plane and the node share (≥ 32 bytes). */
export const FUZZ_NODE_SECRET = "fuzz-node-secret-0123456789abcdefghijklmn";

/** The topology: `ServiceUnderTest` is the control plane, with the node beside it. */
export interface TopologyUnderTest extends ServiceUnderTest {
  node: ServiceUnderTest;
  /** The node's current instance id (it changes when the node restarts). */
  nodeId(): Promise<string>;
  /** Whether the node has an SFU (Janus was started). */
  sfu: boolean;
}

export interface TopologyOptions {
  /** Variables of both processes. */
  env?: Record<string, string>;
  /** Variables of the node only. */
  nodeEnv?: Record<string, string>;
  /** Start a real Janus for the node (`webrtc_sfu` sessions). */
  janus?: boolean;
}

/** Starts the node, then the control plane, and waits until the node is registered. */
export async function startTopology(
  options: TopologyOptions = {},
): Promise<TopologyUnderTest> {
  const dir = await Deno.makeTempDir({ prefix: "avatar-fuzz-topo-" });
  const kvPath = `${dir}/fuzz.sqlite`;
  let janus: RunningJanus | null = null;
  if (options.janus) janus = await startJanus({ debugLevel: 1 });
  const shared = {
    NODE_SECRET: FUZZ_NODE_SECRET,
    NODE_HEARTBEAT_MS: "1000",
    ...options.env,
  };
  const node = await startService(
    {
      ...shared,
      SERVICE_ROLE: "media",
      ...(janus ? janus.env : {}),
      ...options.nodeEnv,
    },
    kvPath,
    "the media node",
  );
  const control = await startService(
    { ...shared, SERVICE_ROLE: "control" },
    kvPath,
    "the control plane",
  );
  const kv = await Deno.openKv(kvPath);
  const nodeId = async () => {
    for (let i = 0; i < 100; i++) {
      for await (
        const e of kv.list<
          { role?: string; url?: string; heartbeat_at: number }
        >({ prefix: ["instances"] })
      ) {
        if (
          e.value.role === "media" && e.value.url === node.base &&
          Date.now() - e.value.heartbeat_at < 2_000
        ) return String(e.key[1]);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the media node never registered");
  };
  await nodeId();
  const topo: TopologyUnderTest = {
    ...control,
    get base() {
      return control.base;
    },
    get wsBase() {
      return control.wsBase;
    },
    get deaths() {
      return control.deaths + node.deaths;
    },
    node,
    nodeId,
    sfu: janus !== null,
    alive: () => control.alive() && node.alive(),
    pid: () => control.pid(),
    async ensureAlive() {
      await node.ensureAlive();
      await control.ensureAlive();
    },
    async healthy(ms) {
      return await control.healthy(ms) && await node.healthy(ms);
    },
    async stop(deadlineMs) {
      const hung = [
        ...await control.stop(deadlineMs),
        ...await node.stop(deadlineMs),
      ];
      kv.close();
      await janus?.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      return hung;
    },
  };
  return topo;
}
