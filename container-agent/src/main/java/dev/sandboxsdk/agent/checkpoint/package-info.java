/**
 * Checkpoints ({@code /api/checkpoints}): tar archives of the whole workspace, kept in the agent's
 * checkpoint directory, made and restored by GNU tar run as the command user. The domain class
 * {@code CheckpointStore} keeps them and says what may run when, and knows no HTTP; {@code
 * CheckpointRoutes} is thin: it parses the request, calls the store, and writes the answer.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.checkpoint;
