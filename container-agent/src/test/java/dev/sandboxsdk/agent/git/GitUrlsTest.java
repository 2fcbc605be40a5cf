package dev.sandboxsdk.agent.git;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import org.junit.jupiter.api.Test;

/** Repository URLs: credentials never reach git's argv, an error, the context or the log line. */
class GitUrlsTest {
  private static final String SECRET = "s3cr3tPW";

  @Test
  void redactionCoversUserInformationOfEveryScheme() {
    for (String url : new String[] {"ssh://u:" + SECRET + "@h/r.git", "git://u:" + SECRET + "@h/r.git",
        "https://u:" + SECRET + "@h/r.git", "https://u:ab/" + SECRET + "@h/r.git", "https://u:ab@" + SECRET + "@h/r.git",
        "HTTP://u:ab?" + SECRET + "@h/r.git"}) {
      assertThat(GitUrls.redact("fatal: unable to access '" + url + "/': 403"))
          .as(url).doesNotContain(SECRET).contains("://***@h/r.git/': 403");
    }
    assertThat(GitUrls.redact("a https://u:p@h/x and ssh://k:q@g/y"))
        .as("each URL of a text on its own").isEqualTo("a https://***@h/x and ssh://***@g/y");
  }

  @Test
  void aPasswordInAnSshOrGitUrlIsRefusedWithoutShowingIt() {
    for (String url : new String[] {"ssh://u:" + SECRET + "@h/r.git", "git://u:" + SECRET + "@h/r.git",
        "ssh://u:ab/" + SECRET + "@h/r.git"}) {
      AgentException e = catchThrowableOfType(() -> GitUrls.source(url), AgentException.class);
      assertThat(e).as(url).isNotNull();
      assertThat(e.code()).isEqualTo(ErrorCode.INVALID_GIT_URL);
      assertThat(e.getMessage() + e.context()).as(url).doesNotContain(SECRET);
    }
    GitUrls.Source user = GitUrls.source("ssh://git@h:22/r.git");
    assertThat(user.url()).isEqualTo("ssh://git@h:22/r.git");
    assertThat(user.redacted()).isEqualTo("ssh://***@h:22/r.git");
    assertThat(GitUrls.source("ssh://h:22/r@v1.git").url()).as("a port, then an '@' in the path")
        .isEqualTo("ssh://h:22/r@v1.git");
  }

  @Test
  void aPasswordInAnScpStyleAddressIsRefusedWithoutShowingIt() {
    for (String url : new String[] {"u:" + SECRET + "@h:r.git", "u:ab/" + SECRET + "@h:r.git",
        "u:" + SECRET + "@github.com:o/r.git", ":" + SECRET + "@h:r"}) {
      AgentException e = catchThrowableOfType(() -> GitUrls.source(url), AgentException.class);
      assertThat(e).as(url).isNotNull();
      assertThat(e.code()).isEqualTo(ErrorCode.INVALID_GIT_URL);
      assertThat(e.getMessage() + e.context()).as(url).doesNotContain(SECRET).contains("***@");
    }
    assertThat(GitUrls.source("git@github.com:o/r.git").url()).isEqualTo("git@github.com:o/r.git");
    assertThat(GitUrls.source("github.com:o/r@v1.git").url()).as("an '@' after the path's slash")
        .isEqualTo("github.com:o/r@v1.git");
  }

  @Test
  void httpCredentialsLeaveTheUrlEvenWithAnUnencodedAt() {
    GitUrls.Source s = GitUrls.source("https://u:ab@" + SECRET + "@h/r.git");
    assertThat(s.url()).isEqualTo("https://h/r.git");
    assertThat(s.user()).isEqualTo("u");
    assertThat(s.password()).isEqualTo("ab@" + SECRET);
    GitUrls.Source encoded = GitUrls.source("https://u:ab%2F" + SECRET + "@h/r.git");
    assertThat(encoded.url()).isEqualTo("https://h/r.git");
    assertThat(encoded.password()).isEqualTo("ab/" + SECRET);
  }

  @Test
  void anHttpPasswordCutShortByAnUnencodedSlashIsRefusedRedacted() {
    for (String url : new String[] {"https://u:ab/" + SECRET + "@h/r.git", "https://u:ab?" + SECRET + "@h/r.git",
        "http://u:ab#" + SECRET + "@h/r.git"}) {
      AgentException e = catchThrowableOfType(() -> GitUrls.source(url), AgentException.class);
      assertThat(e).as(url).isNotNull();
      assertThat(e.code()).isEqualTo(ErrorCode.INVALID_GIT_URL);
      assertThat(e.getMessage() + e.context()).as(url).doesNotContain(SECRET).contains("://***@h/r.git");
    }
    assertThat(GitUrls.source("https://h:8443/r@v1.git").url()).as("a port, then an '@' in the path")
        .isEqualTo("https://h:8443/r@v1.git");
  }
}
