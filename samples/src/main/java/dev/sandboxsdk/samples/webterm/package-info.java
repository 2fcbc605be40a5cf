/**
 * The web terminal sample: a sandbox's terminal in a browser tab, bridged to xterm.js over a
 * WebSocket.
 *
 * <p><b>Not published.</b> An example to read and copy, not an API.
 */
package dev.sandboxsdk.samples.webterm;
