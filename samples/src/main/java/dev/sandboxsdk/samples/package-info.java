/**
 * Small runnable programs, one per use case of the SDK ({@code java -jar samples.jar} runs the
 * quick start).
 *
 * <p><b>Not published.</b> Examples to read and copy, not an API.
 */
package dev.sandboxsdk.samples;
