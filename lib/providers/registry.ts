/**
 * One `EngineFactory` per `provider_type`: the media plane asks here and never names an
 * adapter itself.
 */
import { createExternalEngine } from "./external_engine.ts";
import type {
  EngineFactory,
  ProviderDeps,
  ProviderType,
} from "../ports/providers.ts";
import { createVendorAEngine } from "./vendor_a_realtime.ts";
import { createVendorBEngine } from "./vendor_b.ts";
import { createVendorCEngine } from "./vendor_c.ts";

/** The engine factory for `type`, bound to `deps` (an `AppDeps` fits). */
export function engineFactoryFor(
  deps: ProviderDeps,
  type: ProviderType,
): EngineFactory {
  switch (type) {
    case "external_engine":
      return createExternalEngine(deps);
    case "vendor_a_realtime":
      return createVendorAEngine(deps);
    case "vendor_b":
      return createVendorBEngine(deps);
    case "vendor_c":
      return createVendorCEngine(deps);
  }
}
