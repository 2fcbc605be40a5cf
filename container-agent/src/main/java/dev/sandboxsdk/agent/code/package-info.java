/**
 * Code contexts: stateful interpreters (Python, JavaScript) that keep variables, imports and
 * definitions between runs. {@code CodeContexts} is the store (create, list, restart, delete, with
 * a cap); each {@code CodeContext} owns one long-lived interpreter ({@code Interpreter}) started
 * through the agent's normal spawn path, so isolation, limits and the command user apply as for
 * exec. The interpreter runs a small runner of ours ({@code runner.py}, {@code runner.js}, shipped
 * in the jar and passed on its command line) that speaks JSON lines on stdin and on the file
 * descriptor that was its stdout; the user's prints arrive as events. Runs in one context are
 * serialised; an interrupt is SIGINT to the interpreter; a run that does not stop within the grace
 * period has its interpreter killed and restarted. {@code CodeRoutes} and {@code CodeMessages} are
 * the capability's wire and know nothing of interpreters.
 */
package dev.sandboxsdk.agent.code;
