package dev.sandboxsdk.samples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.samples.DocSnippets.Snippet;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java snippets of README.md, docs/user-guide.md and docs/migration-from-cloudflare.md, as a
 * new user would meet them: every one
 * compiles against the SDK (with javax.tools, in this JVM), and every runnable one runs against a
 * real local sandbox in a child JVM whose environment lacks {@code PYTHONUNBUFFERED} (which this
 * machine happens to set; Python block-buffers stdout on a pipe without it). How blocks are marked
 * and what the harness adds is described in {@link DocSnippets}.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class DocSnippetsIT {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  @TempDir
  Path tmp;

  @Test
  void everyJavaSnippetOfTheReadmeAndTheGuidesCompilesAndTheRunnableOnesRunInACleanEnvironment()
      throws Exception {
    List<Snippet> snippets = new ArrayList<>(DocSnippets.extract(ROOT.resolve("README.md"), "README"));
    snippets.addAll(DocSnippets.extract(ROOT.resolve("docs/user-guide.md"), "UserGuide"));
    snippets.addAll(DocSnippets.extract(ROOT.resolve("docs/migration-from-cloudflare.md"), "Migration"));
    snippets.addAll(DocSnippets.extract(ROOT.resolve("docs/containers.md"), "Containers"));
    snippets.addAll(DocSnippets.extract(ROOT.resolve("docs/kubernetes.md"), "Kubernetes"));
    assertThat(snippets).as("snippets found").hasSizeGreaterThanOrEqualTo(20);
    Path classes = compile(snippets);
    List<String> runnable = snippets.stream().filter(Snippet::run).map(Snippet::className).toList();
    assertThat(runnable).as("most snippets run").hasSizeGreaterThanOrEqualTo(14);

    String out = runInCleanEnvironment(classes, runnable);

    SoftAssertions softly = new SoftAssertions();
    for (Snippet s : snippets) {
      if (s.run()) {
        softly.assertThat(out).as("%s line %d ran to the end; its output and the others':%n%s", s.source(), s.line(),
            out).contains("SNIPPET " + s.className() + " OK");
      }
    }
    softly.assertAll();
  }

  /** Compiles every snippet into one directory; fails with the compiler's messages and the source. */
  private Path compile(List<Snippet> snippets) throws IOException {
    Path src = Files.createDirectories(tmp.resolve("src"));
    Path classes = Files.createDirectories(tmp.resolve("classes"));
    List<File> files = new ArrayList<>();
    for (Snippet s : snippets) {
      Path f = src.resolve(s.className() + ".java");
      Files.writeString(f, s.javaSource(), StandardCharsets.UTF_8);
      files.add(f.toFile());
    }
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertThat(javac).as("a JDK compiler").isNotNull();
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    try (StandardJavaFileManager fm = javac.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
      boolean ok = javac.getTask(null, fm, diagnostics,
          List.of("-d", classes.toString(), "-classpath", System.getProperty("java.class.path"), "-proc:none"), null,
          fm.getJavaFileObjectsFromFiles(files)).call();
      StringBuilder report = new StringBuilder();
      diagnostics.getDiagnostics().forEach(d -> report.append(d.getSource() == null ? "" : d.getSource().getName())
          .append(':').append(d.getLineNumber()).append(": ").append(d.getMessage(Locale.ROOT)).append('\n'));
      assertThat(ok).as("the snippets compile:%n%s", report).isTrue();
    }
    return classes;
  }

  /**
   * Runs the snippets in a child JVM: in a scratch directory, without PYTHONUNBUFFERED, and with
   * a local git repository for the README's {@code url}.
   */
  private String runInCleanEnvironment(Path classes, List<String> names) throws Exception {
    Path repo = tmp.resolve("origin");
    git(tmp, "init", "-q", repo.toString());
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init");
    Path cwd = Files.createDirectories(tmp.resolve("cwd"));
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", classes + File.pathSeparator + System.getProperty("java.class.path"),
        "-Dsnippet.gitRepo=" + repo, DocSnippetsMain.class.getName()));
    cmd.addAll(names);
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectErrorStream(true);
    pb.environment().remove("PYTHONUNBUFFERED");
    Process child = pb.start();
    CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
      try {
        return new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "(output unreadable: " + e + ")";
      }
    });
    try {
      assertThat(child.waitFor(8, TimeUnit.MINUTES)).as("the snippets finish").isTrue();
      return out.get(30, TimeUnit.SECONDS);
    } finally {
      child.destroyForcibly();
    }
  }

  private static void git(Path dir, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("git"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0).as("git %s: %s", cmd, out).isTrue();
  }
}
