/**
 * Files: Cloudflare's file routes (read, write, delete, rename, move, mkdir, list-files, exists,
 * the streamed read) and ours (stat, the raw download and upload). The domain class {@code
 * FileOperations} reads, lists, describes and uploads files within the agent's budget, and
 * {@code FileTypes} tells text from binary; they work through the safe file system layer of
 * {@code agent.fs} and know no HTTP. {@code FileRoutes} and {@code FileTransferRoutes} are thin:
 * they parse the request, call the domain, and write the answer or stream the bytes.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.files;
