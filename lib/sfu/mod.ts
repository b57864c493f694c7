/**
 * The realtime SFU (DECISIONS 11): what the rest of the app uses of it — the port and
 * its Janus adapter, the launcher that runs Janus from the repository's config, the
 * health probe, ICE servers for browsers, the SFU's identity and the mountpoint
 * lifecycle. A live session's signalling link and the sweep that reconciles Janus with
 * KV belong to the media plane (lib/media/sfu_signalling.ts, lib/media/sfu_sweep.ts).
 */
export {
  type IceCandidate,
  type ListedMountpoint,
  type Mountpoint,
  SfuError,
  type SfuErrorKind,
  type SfuPort,
  type Viewer,
  type ViewerEvents,
} from "../ports/sfu.ts";
export { createJanusSfu, type JanusSfuOptions } from "./janus.ts";
export {
  JanusLaunchError,
  type JanusOptions,
  type RunningJanus,
  startJanus,
} from "./launch.ts";
export { markSfuFailing, sfuHealthy } from "./health.ts";
export { iceServersFor, turnCredential } from "./ice.ts";
export { sfuIdentity } from "./identity.ts";
export {
  closeMountpoint,
  type MountpointRecord,
  openMountpoint,
  readMountpointRecord,
  type ViewerState,
} from "./mountpoints.ts";
export { rejectsVideo } from "./sdp.ts";
