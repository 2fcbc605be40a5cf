package dev.sandboxsdk.samples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Java code blocks of a Markdown file, each turned into a class a test can compile and run.
 *
 * <p>A block may be preceded by one HTML comment (invisible when the Markdown is rendered):
 * <ul>
 *   <li>none, or {@code <!-- snippet: run -->}: the block is run as written;
 *   <li>{@code <!-- snippet: run; given: JAVA -->}: {@code JAVA} runs first, in the same method, to
 *       declare what the block uses but does not declare itself (typically
 *       {@code Sandbox sandbox = LocalSandbox.start();});
 *   <li>{@code <!-- snippet: compile-only: REASON -->}: the block is compiled but not run, because
 *       it needs what a test machine cannot be assumed to have (REASON says what); it may have a
 *       {@code given} part too.
 * </ul>
 * Every class is {@code public final class NAME { public static void run() throws Exception { GIVEN
 * BLOCK } }} with the imports a reader of the docs is assumed to have; a top-level
 * {@code sandbox} variable that the block leaves open is closed after it.
 */
final class DocSnippets {
  static final List<String> IMPORTS = List.of("dev.sandboxsdk.*", "dev.sandboxsdk.local.*", "dev.sandboxsdk.container.*", "dev.sandboxsdk.kubernetes.*",
      "dev.sandboxsdk.samples.HeadlessTask", "dev.sandboxsdk.samples.webterm.WebTerminal", "java.net.URI",
      "java.nio.file.Path", "java.time.Duration", "java.util.List", "java.util.Optional", "java.util.concurrent.CompletableFuture",
      "java.util.concurrent.Flow", "java.util.concurrent.TimeUnit", "java.util.regex.Pattern",
      "okhttp3.OkHttpClient");
  private static final Pattern BLOCK = Pattern.compile(
      "(?:<!-- snippet: (?<marker>.*?) -->\\n)?```java\\n(?<code>.*?)```", Pattern.DOTALL);
  private static final Pattern OPEN_SANDBOX = Pattern.compile("(?m)^\\s*(?:Local)?Sandbox sandbox =");

  private DocSnippets() {}

  /** One code block. */
  record Snippet(String className, String source, int line, boolean run, String given, String code) {
    /** The compilable source of the class. */
    String javaSource() {
      StringBuilder s = new StringBuilder();
      for (String imp : IMPORTS) {
        s.append("import ").append(imp).append(";\n");
      }
      s.append("\n/** ").append(source).append(", line ").append(line).append(". */\n")
          .append("public final class ").append(className).append(" {\n")
          .append("  public static void run() throws Exception {\n");
      if (!given.isEmpty()) {
        s.append(given).append('\n');
      }
      s.append(code);
      if (OPEN_SANDBOX.matcher(given + "\n" + code).find()) {
        s.append("sandbox.close();\n");
      }
      return s.append("  }\n}\n").toString();
    }
  }

  /** The Java blocks of {@code markdown}, named after {@code prefix} and their line. */
  static List<Snippet> extract(Path markdown, String prefix) throws IOException {
    String text = Files.readString(markdown, StandardCharsets.UTF_8);
    List<Snippet> out = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      int line = 1 + (int) text.substring(0, m.start("code")).chars().filter(c -> c == '\n').count();
      String marker = m.group("marker") == null ? "run" : m.group("marker").strip();
      String given = "";
      int g = marker.indexOf("; given: ");
      if (g >= 0) {
        given = marker.substring(g + "; given: ".length());
        marker = marker.substring(0, g);
      }
      boolean run;
      if (marker.equals("run")) {
        run = true;
      } else if (marker.startsWith("compile-only: ") && marker.length() > "compile-only: ".length()) {
        run = false;
      } else {
        throw new IllegalArgumentException(markdown + ":" + line + ": unknown snippet marker: " + marker);
      }
      out.add(new Snippet(prefix + "_L" + line, markdown.getFileName().toString(), line, run, given,
          m.group("code")));
    }
    return out;
  }
}
