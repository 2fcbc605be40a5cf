package dev.sandboxsdk.agent.code;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The languages a code context can run, each with its interpreter and the runner it is given. */
public enum CodeLanguage {
  PYTHON("python", "python3", "-c", "runner.py", "apt-get install python3"),
  JAVASCRIPT("javascript", "node", "-e", "runner.js", "apt-get install nodejs");

  private final String wireName;
  private final String executable;
  private final String inlineFlag;
  private final String runner;
  private final String hint;

  CodeLanguage(String wireName, String executable, String inlineFlag, String resource, String hint) {
    this.wireName = wireName;
    this.executable = executable;
    this.inlineFlag = inlineFlag;
    this.runner = load(resource);
    this.hint = hint;
  }

  public String wireName() {
    return wireName;
  }

  /** The interpreter's name, looked up on the context's {@code PATH}. */
  public String executable() {
    return executable;
  }

  /**
   * Parses {@code python} ({@code python3}, {@code py}) or {@code javascript} ({@code js},
   * {@code node}); null means python, as Cloudflare's default.
   *
   * @throws AgentException VALIDATION_FAILED for any other name
   */
  public static CodeLanguage parse(String name) {
    if (name == null) {
      return PYTHON;
    }
    switch (name.toLowerCase(Locale.ROOT)) {
      case "python": case "python3": case "py":
        return PYTHON;
      case "javascript": case "js": case "node":
        return JAVASCRIPT;
      default:
        throw new AgentException(ErrorCode.VALIDATION_FAILED, "language must be python or javascript, not \""
            + name + "\"", Map.of("field", "language"));
    }
  }

  /**
   * The argv that starts this language's runner: the interpreter, looked up on the command's
   * {@code PATH} as the sandbox sees it, with the runner's source inline.
   */
  List<String> argv() {
    return List.of(executable, inlineFlag, runner);
  }

  /** The error for an interpreter that is not installed where the sandbox looks ({@code path}). */
  AgentException notAvailable(String path) {
    return new AgentException(ErrorCode.INTERPRETER_NOT_AVAILABLE, wireName + " code contexts need " + executable
        + ", which is not installed in this sandbox (not found on PATH " + path + "); install it (" + hint
        + ") or use an image with it", Map.of("language", wireName, "executable", executable));
  }

  private static String load(String resource) {
    try (InputStream in = CodeLanguage.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("the agent jar lacks " + resource);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
