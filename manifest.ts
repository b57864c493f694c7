// The route manifest, in the shape of Fresh's fresh.gen.ts: every module under routes/,
// keyed by its file path. tests/manifest_test.ts checks it lists exactly the files there.
import * as $_middleware from "./routes/_middleware.ts";
import * as $healthz from "./routes/healthz.ts";
import * as $readyz from "./routes/readyz.ts";
import type { Manifest } from "./lib/http.ts";

const manifest: Manifest = {
  routes: {
    "./routes/_middleware.ts": $_middleware,
    "./routes/healthz.ts": $healthz,
    "./routes/readyz.ts": $readyz,
  },
};

export default manifest;
