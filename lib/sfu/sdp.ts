/**
 * What the service reads in a browser's SDP answer before it goes to the SFU.
 */

/**
 * Whether an answer rejects the offered video (DECISIONS 11): its video section has
 * port 0 (`m=video 0 …`, e.g. a Firefox without OpenH264 answering an H.264-only
 * offer), or it has none. The SFU would refuse the whole answer.
 */
export function rejectsVideo(sdp: string): boolean {
  const video = sdp.match(/^m=video (\d+)/m);
  return video === null || video[1] === "0";
}
