/**
 * The realtime SFU (DECISIONS 11): the port the service uses, its Janus adapter, and
 * the launcher that runs Janus from the repository's config.
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
} from "./port.ts";
export { createJanusSfu, type JanusSfuOptions } from "./janus.ts";
export {
  JanusLaunchError,
  type JanusOptions,
  type RunningJanus,
  startJanus,
} from "./launch.ts";
