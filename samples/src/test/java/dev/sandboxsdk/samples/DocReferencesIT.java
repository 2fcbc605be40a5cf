package dev.sandboxsdk.samples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The docs stand on their own: every Markdown file they name ({@code docs/protocol/README.md},
 * {@code user-guide.md}, ...) is in the repository, relative to the doc or to the root.
 */
class DocReferencesIT {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Pattern MD = Pattern.compile("[A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md\\b");
  private static final List<String> DOCS = List.of("README.md", "docs/decisions.md", "docs/user-guide.md",
      "docs/migration-from-cloudflare.md", "docs/mcp.md", "docs/performance.md", "docs/protocol/README.md", "docs/kubernetes.md",
      "docs/containers.md", "docs/security.md", "docs/development.md", "docs/protocol/exec.md", "docs/protocol/processes.md",
      "docs/protocol/terminals.md", "docs/protocol/files.md", "docs/protocol/watch.md", "docs/protocol/ports.md",
      "docs/protocol/git.md", "docs/protocol/events.md", "docs/protocol/semantics.md", "docs/protocol/checkpoints.md",
      "docs/protocol/cloudflare.md", "docs/protocol/command-line.md", "docs/protocol/fixtures.md",
      "docs/protocol/sessions.md", "docs/protocol/code.md");

  @Test
  void everyMarkdownFileTheDocsNameIsInTheRepository() throws Exception {
    List<String> missing = new ArrayList<>();
    for (String doc : DOCS) {
      Path file = ROOT.resolve(doc);
      String text = Files.readString(file, StandardCharsets.UTF_8);
      Matcher m = MD.matcher(text);
      while (m.find()) {
        String name = m.group();
        if (!Files.exists(file.getParent().resolve(name)) && !Files.exists(ROOT.resolve(name))) {
          int line = 1 + (int) text.substring(0, m.start()).chars().filter(c -> c == '\n').count();
          missing.add(doc + ":" + line + ": " + name);
        }
      }
    }

    assertThat(missing).as("Markdown files named by the docs but not in the repository").isEmpty();
  }
}
