package dev.sandboxsdk.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.GitCheckoutOptions;
import org.junit.jupiter.api.Test;

class RealGitTest {
  private static GitCheckoutOptions creds(String user, String password) {
    return GitCheckoutOptions.builder().credentials(user, password).build();
  }

  @Test
  void credentialsBecomePercentEncodedUserInformation() {
    assertThat(RealGit.withCredentials("https://git.example.com/o/r.git", creds("x-access-token", "p@ss:w/rd ü")))
        .isEqualTo("https://x-access-token:p%40ss%3Aw%2Frd%20%C3%BC@git.example.com/o/r.git");
    assertThat(RealGit.withCredentials("http://h:8080/r", creds("u", "p"))).isEqualTo("http://u:p@h:8080/r");
    // The rest of the URL is kept byte for byte: IPv6 literals, ports, escapes already in the path.
    assertThat(RealGit.withCredentials("HTTPS://[::1]:8443/o/my%20repo.git?x=%2F", creds("u", "p")))
        .isEqualTo("HTTPS://u:p@[::1]:8443/o/my%20repo.git?x=%2F");
  }

  @Test
  void withoutCredentialsTheUrlIsSentAsGiven() {
    assertThat(RealGit.withCredentials("git@github.com:o/r.git", GitCheckoutOptions.defaults()))
        .isEqualTo("git@github.com:o/r.git");
  }

  @Test
  void credentialsAreRefusedWhereTheyCannotApplyAndNeverEchoed() {
    assertThatThrownBy(() -> RealGit.withCredentials("ssh://git@h/r.git", creds("u", "secret1")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("http(s)")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("secret1"));
    assertThatThrownBy(() -> RealGit.withCredentials("https://a:old@h/r.git", creds("u", "secret2")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one way only")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("secret2").doesNotContain("old"));
    assertThat(creds("u", "secret3").toString()).doesNotContain("secret3");
  }

  @Test
  void branchesAreVisibleAsciiNotStartingWithADash() {
    assertThat(GitCheckoutOptions.builder().branch("release/1.2~rc").build().branch()).isEqualTo("release/1.2~rc");
    for (String bad : new String[] {"", "a b", "caf\u00e9", "-x", "x".repeat(256), "nl\n"}) {
      assertThatThrownBy(() -> GitCheckoutOptions.builder().branch(bad).build()).as(bad)
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void messagesShowUrlsWithoutUserInformation() {
    assertThat(RealGit.redacted("https://u:tok@h/r.git")).isEqualTo("https://***@h/r.git");
    assertThat(RealGit.redacted("/workspace/repo")).isEqualTo("/workspace/repo");
    assertThat(RealGit.redacted("ssh://u:tok@h/r.git")).isEqualTo("ssh://***@h/r.git");
    assertThat(RealGit.redacted("git://u:tok@h/r.git")).isEqualTo("git://***@h/r.git");
    assertThat(RealGit.redacted("https://u:to/k@h/r.git")).as("an unencoded '/' in the password")
        .isEqualTo("https://***@h/r.git");
    assertThat(RealGit.redacted("https://u:t@k@h/r.git")).as("an unencoded '@' in the password")
        .isEqualTo("https://***@h/r.git");
  }
}
