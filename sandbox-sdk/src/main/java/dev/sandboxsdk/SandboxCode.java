package dev.sandboxsdk;

import java.util.List;
import java.util.Optional;

/**
 * Code contexts of a sandbox ({@link Sandbox#code()}): stateful Python and JavaScript
 * interpreters in which variables, imports and definitions persist from one run to the next,
 * like the cells of a notebook.
 *
 * <pre>{@code
 * try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
 *   py.run("import pandas as pd\ndf = pd.read_csv('sales.csv')");
 *   CodeResult r = py.run("df['total'].sum()");
 *   System.out.println(r.value().map(CodeOutput::text).orElse(""));
 *   CodeResult chart = py.run("df.plot(x='month', y='total')");   // the open figure comes back as PNG
 *   Files.write(Path.of("chart.png"), chart.outputs().get(0).png().orElseThrow());
 * }
 * }</pre>
 *
 * <p>The sandbox needs the language's interpreter ({@code python3} or {@code node}); without it
 * {@link #createContext} throws {@link SandboxInvalidRequestException} with the code {@code
 * INTERPRETER_NOT_AVAILABLE} and a message naming what to install.
 *
 * <p><b>Errors.</b> Every method throws unchecked exceptions: the ones each method names, plus
 * the connection, timeout and auth exceptions of every {@link Sandbox} call.
 *
 * <p><b>Threading.</b> Thread-safe and stateless: each call is one request. The view costs
 * nothing to get. After the sandbox is closed every method throws {@link IllegalStateException}.
 */
public interface SandboxCode {

  /**
   * Starts an interpreter for a new context.
   *
   * @throws SandboxInvalidRequestException {@code INTERPRETER_NOT_AVAILABLE} if the sandbox lacks
   *     the language's interpreter
   * @throws SandboxServerException {@code TOO_MANY_CONTEXTS} at the sandbox's cap (64 by default),
   *     {@code INTERPRETER_FAILED} if the interpreter did not start
   */
  CodeContext createContext(CodeContextOptions options);

  /** The open contexts, oldest first. */
  List<CodeContextInfo> contexts();

  /** A handle on the open context {@code id}, or empty if there is none. */
  Optional<CodeContext> context(String id);
}
