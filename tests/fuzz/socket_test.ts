import { assertClean } from "../../fuzz/_lib.ts";
import { runSocketFuzz } from "../../fuzz/socket.ts";

Deno.test("socket fuzzer: a few hundred cases of browser garbage (SFU signalling among them) through a control plane's relay to a media node with Janus; nothing dies, hangs or answers 5xx; the other tenant keeps streaming", async () => {
  const report = await runSocketFuzz({ cases: 300, seed: 11 });
  assertClean(report, 300);
});
