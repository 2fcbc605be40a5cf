package dev.sandboxsdk.agent.background;

/** Bytes to write to a background process's stdin, and whether to close it after them. */
public record StdinWrite(byte[] bytes, boolean eof) {
}
